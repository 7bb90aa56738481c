"""The test apps' logs read back (tests/e2e/applog.py): no cluster needed."""

from __future__ import annotations

from tests.e2e import applog

LOG = """\
2026-01-02T03:04:05.100000000Z [::ffff:10.123.2.1]:41422: connected
2026-01-02T03:04:05.100200000Z [::ffff:10.123.2.1]:41422: url:/cgi-bin/flap
2026-01-02T03:04:05.101000000Z [10.123.2.1]:41422: agent:kube-probe/1.37
2026-01-02T03:04:05.101100000Z [10.123.2.1]:41422: answer:503
2026-01-02T03:04:06.000000000Z [::ffff:10.123.0.20]:50000: connected
2026-01-02T03:04:06.000100000Z [::ffff:10.123.0.20]:50000: url:/index.html
2026-01-02T03:04:06.000200000Z [::ffff:10.123.0.20]:50000: response:200
"""


def test_a_cgi_scripts_user_agent_line_is_the_attempts_agent() -> None:
    kubelet, shadow = applog.parse(LOG)
    assert (kubelet.peer, kubelet.path, kubelet.answer) == ("10.123.2.1", "/cgi-bin/flap", "503")
    assert kubelet.agent == "kube-probe/1.37"
    assert (shadow.peer, shadow.answer, shadow.agent) == ("10.123.0.20", "200", None)
