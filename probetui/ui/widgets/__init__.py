"""Group the widgets by the pane of the main screen they draw."""
