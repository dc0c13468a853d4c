"""Profiling widgets: the ActivityPanel (profile, export an engine), its forms and log, and
the ProfileView of a report."""
