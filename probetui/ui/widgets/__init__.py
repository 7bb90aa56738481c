"""Widgets, grouped by the pane of the main screen they draw."""
