"""Where activities run: the TargetPicker of saved connections."""
