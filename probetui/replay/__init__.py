"""`probetui replay FILE` shows a recording on the live screen, with a time cursor for "now"."""
