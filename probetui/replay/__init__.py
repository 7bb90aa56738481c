"""`probetui replay FILE`: a recording on the live screen, with a time cursor for "now"."""
