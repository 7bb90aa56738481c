"""Run one attempt of one handler, as `pkg/probe` runs it: http, tcp, grpc, exec.

Imports nothing heavy at package level: `probetui check` imports only the handler it runs.
"""

from probetui.probe.base import Attempt, Result

__all__ = ["Attempt", "Result"]
