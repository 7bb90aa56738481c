"""Screens: the main screen's layout and the help screen."""
