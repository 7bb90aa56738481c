"""Fixtures for the API emulator tests (defined in tests/kube/emulator/fixtures.py so other
test packages can import the same ones)."""

from tests.kube.emulator.fixtures import api, core_v1, echo_server, http_target

__all__ = ["api", "core_v1", "echo_server", "http_target"]
