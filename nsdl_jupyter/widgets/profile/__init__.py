"""Profiling widgets: the ActivityPanel (profile, export an engine), its forms and log, and
the ProfileView of a report, and the SweepPanel of a grid of profiles."""
