"""Every test runs without the user's or the host's probetui configuration.

probetui reads `~/.config/probetui/config.yaml` (or `$XDG_CONFIG_HOME`'s, `PROBETUI_CONFIG`'s)
and `/etc/probetui/config.yaml`, and settings from the environment: a developer's own file or
`PROBETUI_READ_ONLY=locked` in their shell must not change what a test sees, in-process or in
the subprocesses it starts (they inherit the environment).

One exception, by design: a `/etc/probetui/config.yaml` that says `lock: true` is read wherever
`PROBETUI_SYSTEM_CONFIG` points, since a lock that a variable could redirect would lock nothing.
On a machine whose administrator locked it, the tests that lift read-only fail with the
refusal's own line; CI machines have no such file.
"""

from __future__ import annotations

import pytest

PROBETUI_ENV = (
    "PROBETUI_CONFIG",
    "PROBETUI_READ_ONLY",
    "PROBETUI_THEME",
    "PROBETUI_VIA",
    "PROBETUI_KUBELET_VERSION",
    "NO_COLOR",
)


@pytest.fixture(autouse=True)
def _no_probetui_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    nowhere = tmp_path_factory.getbasetemp() / "no-probetui-config"  # never created
    monkeypatch.setenv("XDG_CONFIG_HOME", str(nowhere / "xdg"))
    monkeypatch.setenv("PROBETUI_SYSTEM_CONFIG", str(nowhere / "system.yaml"))
    for name in PROBETUI_ENV:
        monkeypatch.delenv(name, raising=False)
