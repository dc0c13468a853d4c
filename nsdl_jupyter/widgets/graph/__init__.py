"""GraphView, the model canvas, and what its canvas asks of an editable document."""
