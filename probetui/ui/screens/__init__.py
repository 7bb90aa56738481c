"""Lay out the screens: the main screen and the help screen."""
