"""Show the terminal UI (Textual); `probetui.ui.app.run(engine)` is the entry point.

Nothing here does I/O or runs probes: widgets read the timeline store on a timer and send the
user's commands to the engine.
"""
