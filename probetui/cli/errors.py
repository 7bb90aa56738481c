"""Name what the command line exits with, and the error that means bad usage or input.

Every command returns these, so `probetui check`'s documented statuses and the live runs'
128+N cannot come apart between commands.
"""

from __future__ import annotations

import signal

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3
# as a shell reports a process ended by signal N
EXIT_SIGNAL_BASE = 128
# SIGINT, also when it reaches Python as KeyboardInterrupt
EXIT_INTERRUPTED = EXIT_SIGNAL_BASE + int(signal.SIGINT)


class UsageError(Exception):
    """Signals bad usage or bad input: printed as one line, exit 2."""


__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SIGNAL_BASE",
    "EXIT_UNKNOWN",
    "EXIT_USAGE",
    "UsageError",
]
