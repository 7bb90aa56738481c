"""The e2e pod set: each demo behaviour as a real pod, built from the by-hand images.

HTTP apps are busybox `httpd -vvv` with small CGI scripts written at container start. At that
verbosity httpd logs every connection and request with its peer (`[::ffff:IP]:PORT: url:/p`,
`response:200`), and the container runtime stamps each log line: that is the app's own record
of who probed it, when, and what it answered. The gRPC app logs each Check the same way.

Every pod names its node (`pod(..., node=...)`, the first node by default); the shadow's pod set
is made once per node, the second node's names ending in its link's name (`flap-ft1-node2`).
"""

from __future__ import annotations

from typing import Any

from tests.e2e.build import IMAGES
from tests.e2e.cluster import NODE, Node

HTTP_PORT = 8080
GRPC_PORT = 9090
# the flap endpoint turns between Success and Failure every this many seconds of wall time
FLAP_SECONDS = 10


def _cgi(name: str, body: str) -> str:
    return (
        f"cat > /www/cgi-bin/{name} <<'EOF'\n#!/bin/sh\n{body}\nEOF\nchmod +x /www/cgi-bin/{name}\n"
    )


def _reply(status: str, text: str) -> str:
    # the answer and the User-Agent go to httpd's stderr too (the container log), beside
    # httpd's own lines
    code = status.split()[0]
    return (
        f'echo "$REMOTE_ADDR:$REMOTE_PORT: agent:$HTTP_USER_AGENT" >&2; '
        f'echo "$REMOTE_ADDR:$REMOTE_PORT: answer:{code}" >&2; '
        f"printf 'Status: {status}\\r\\nContent-Type: text/plain\\r\\n\\r\\n{text}\\n'"
    )


def web_script(
    *,
    flap: int = FLAP_SECONDS,
    sick_after: int | None = None,
    sleep_first: int = 0,
    port: int = HTTP_PORT,
    exit_0_on_term: bool = False,
    node: Node = NODE,
) -> str:
    """The shell a web container runs: CGI endpoints, then httpd in the foreground. `node` is
    where it runs: its kubelet dials a bridge pod from the node's pod gateway."""
    parts = ["mkdir -p /www/cgi-bin", "echo ok > /www/index.html", "date +%s > /tmp/started"]
    # flap: Success and Failure in turns of `flap` seconds of wall time, Failure until the first
    # Success turn that begins `flap` seconds or more after the start. Started down, each side
    # reaches Failure first: a turn to Failure just after the start could be seen as Success by
    # the side that probed first only, before the other side has any verdict, and a threshold of
    # failures holds it past the slack. Whole turns only: a Success turn cut short by the start
    # may be shorter than a period, seen by the side whose phase falls in it and missed by the
    # other, which then stays not ready for a threshold of failures
    flap_body = (
        f"now=$(date +%s); "
        f"if [ $(( now / {flap} * {flap} - $(cat /tmp/started) )) -ge {flap} ] && "
        f"[ $(( now / {flap} % 2 )) = 0 ]; then {_reply('200 OK', 'up')}; "
        f"else {_reply('503 Service Unavailable', 'down for a while')}; fi"
    )
    parts.append(_cgi("flap", flap_body))
    parts.append(_cgi("slow", f"sleep 3; {_reply('200 OK', 'late')}"))
    # once: 200 to the kubelet's first request (it dials from the pod gateway; httpd gives
    # REMOTE_ADDR as [::ffff:IP]), 503 to every other; mkdir is the atomic "first time"
    gateway = node.pod_gateway
    once_body = (
        f'case "$REMOTE_ADDR" in "{gateway}"|*":{gateway}]") first=1;; esac; '
        f'if [ -n "$first" ] && mkdir /tmp/once 2>/dev/null; '
        f"then {_reply('200 OK', 'first')}; "
        f"else {_reply('503 Service Unavailable', 'never again')}; fi"
    )
    parts.append(_cgi("once", once_body))
    parts.append(
        _cgi(
            "redirect",
            "echo \"$REMOTE_ADDR:$REMOTE_PORT: answer:302\" >&2; printf 'Status: 302 Found\\r\\nLocation: http://elsewhere.invalid/landing\\r\\n\\r\\nmoved\\n'",
        )
    )
    parts.append(
        _cgi(
            "hop",
            "echo \"$REMOTE_ADDR:$REMOTE_PORT: answer:302\" >&2; printf 'Status: 302 Found\\r\\nLocation: /index.html\\r\\n\\r\\n'",
        )
    )
    parts.append(
        _cgi(
            "healthz",
            f"if [ -e /tmp/sick ]; then {_reply('500 Internal Server Error', 'sick')}; else {_reply('200 OK', 'fine')}; fi",
        )
    )
    script = "\n".join(parts) + "\n"
    if sick_after is not None:
        script += f"(sleep {sick_after}; touch /tmp/sick) &\n"
    if sleep_first:
        script += f"sleep {sleep_first}\n"
    if exit_0_on_term:
        # an app that ends cleanly when asked to: SIGTERM makes it exit 0
        return script + f"httpd -f -vvv -p {port} -h /www & trap 'kill $!; exit 0' TERM; wait\n"
    return script + f"exec httpd -f -vvv -p {port} -h /www\n"


def _http(path: str, port: int | str = HTTP_PORT, **probe: Any) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": port}, **probe}


def pod(
    name: str, ns: str, containers: list[dict[str, Any]], node: Node = NODE, **spec: Any
) -> dict[str, Any]:
    """A pod bound to `node` by name, with the suite's defaults."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"suite": "e2e", "app": name}},
        "spec": {
            "nodeName": node.name,
            "automountServiceAccountToken": False,
            "dnsPolicy": "Default",
            "terminationGracePeriodSeconds": 2,
            "containers": containers,
            **spec,
        },
    }


def web(name: str = "web", script: str | None = None, **probes: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": IMAGES["busybox"],
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", script or web_script()],
        "ports": [{"name": "http", "containerPort": HTTP_PORT}],
        **probes,
    }


def busybox(name: str, command: list[str], **probes: Any) -> dict[str, Any]:
    """A busybox container that runs `command` (by default it only sleeps)."""
    return {
        "name": name,
        "image": IMAGES["busybox"],
        "imagePullPolicy": "Never",
        "command": command,
        **probes,
    }


SLEEP = ["sleep", "3600"]


def grpc_app(flip: str = "15s", **probes: Any) -> dict[str, Any]:
    return {
        "name": "api",
        "image": IMAGES["grpchealth"],
        "imagePullPolicy": "Never",
        "args": [f"--port={GRPC_PORT}", f"--flip={flip}"],
        **probes,
    }


def node_pod_name(base: str, node: Node) -> str:
    """A pod's name on its node: the first node's pods keep the base name."""
    return base if node == NODE else f"{base}-{node.link}"


# the pods whose tests compare each side's outcome with what the app answered it: a CGI answer
# is a shell forked per request, which on a loaded machine can come after the default 1 s and
# turn the app's 200 into a timeout on one side only
_CGI_TIMING = {"periodSeconds": 2, "timeoutSeconds": 3}


def shadow_pod_set(ns: str, node: Node = NODE) -> list[dict[str, Any]]:
    """Every demo behaviour on one node, for the shadow-beside-the-kubelet run."""

    def placed(name: str, ns: str, containers: list[dict[str, Any]], **spec: Any) -> dict:
        return pod(node_pod_name(name, node), ns, containers, node=node, **spec)

    return [
        placed(
            "flap-ft1",
            ns,
            [web(readinessProbe=_http("/cgi-bin/flap", failureThreshold=1, **_CGI_TIMING))],
        ),
        placed(
            "flap-ft3",
            ns,
            [web(readinessProbe=_http("/cgi-bin/flap", failureThreshold=3, **_CGI_TIMING))],
        ),
        placed(
            "kubelet-first",
            ns,
            [
                web(
                    script=web_script(node=node),
                    readinessProbe=_http("/cgi-bin/once", failureThreshold=3, **_CGI_TIMING),
                )
            ],
        ),
        placed(
            "slow-guarded",
            ns,
            [
                web(
                    script=web_script(sleep_first=12),
                    startupProbe=_http("/index.html", periodSeconds=2, failureThreshold=10),
                    livenessProbe=_http("/index.html", periodSeconds=2, failureThreshold=2),
                    readinessProbe=_http("/index.html", periodSeconds=2),
                )
            ],
        ),
        placed(
            "slow-unguarded",
            ns,
            [
                web(
                    script=web_script(sleep_first=12),
                    livenessProbe=_http("/index.html", periodSeconds=2, failureThreshold=2),
                )
            ],
        ),
        placed(
            "exec-file",
            ns,
            [
                busybox(
                    "worker",
                    ["sh", "-c", "touch /tmp/healthy; sleep 40; rm /tmp/healthy; exec sleep 3600"],
                    readinessProbe={
                        "exec": {"command": ["cat", "/tmp/healthy"]},
                        "periodSeconds": 3,
                    },
                )
            ],
        ),
        placed(
            "exec-varied",
            ns,
            [
                # a different message each second: past ten similar events in ten minutes
                # the kubelet's event correlator combines them into one aggregate event
                busybox(
                    "worker",
                    SLEEP,
                    readinessProbe={
                        "exec": {"command": ["sh", "-c", "echo not ready at $(date +%s); exit 1"]},
                        "periodSeconds": 1,
                    },
                )
            ],
        ),
        placed(
            "tcp", ns, [web(readinessProbe={"tcpSocket": {"port": HTTP_PORT}, "periodSeconds": 3})]
        ),
        placed(
            "grpc-flip",
            ns,
            [
                grpc_app(
                    readinessProbe={
                        "grpc": {"port": GRPC_PORT, "service": "demo.Orders"},
                        "periodSeconds": 2,
                    },
                    livenessProbe={"grpc": {"port": GRPC_PORT}, "periodSeconds": 3},
                )
            ],
        ),
        placed("redirect", ns, [web(readinessProbe=_http("/cgi-bin/redirect", periodSeconds=3))]),
        placed(
            "timeout",
            ns,
            [web(readinessProbe=_http("/cgi-bin/slow", periodSeconds=3, timeoutSeconds=1))],
        ),
        placed(
            "initial-delay",
            ns,
            [web(readinessProbe=_http("/index.html", periodSeconds=2, initialDelaySeconds=10))],
        ),
        placed(
            "never",
            ns,
            [
                web(
                    script=web_script(sick_after=20),
                    livenessProbe=_http("/cgi-bin/healthz", periodSeconds=2, failureThreshold=2),
                )
            ],
            restartPolicy="Never",
        ),
        placed(
            "onfailure-exit0",
            ns,
            [
                web(
                    script=web_script(sick_after=10, exit_0_on_term=True),
                    livenessProbe=_http("/cgi-bin/healthz", periodSeconds=2, failureThreshold=2),
                )
            ],
            restartPolicy="OnFailure",
        ),
        placed(
            "unknown-port",
            ns,
            # a port name no container port has: an error, worded as the node's release words it
            [web(readinessProbe=_http("/index.html", port="metrics", periodSeconds=3))],
        ),
        placed(
            "hostnet",
            ns,
            [
                web(
                    script=web_script(port=18080),
                    ports=[],
                    readinessProbe={
                        "httpGet": {"path": "/cgi-bin/flap", "port": 18080},
                        "periodSeconds": 2,
                    },
                )
            ],
            hostNetwork=True,
        ),
    ]


def _readiness(name: str, ns: str, probe: dict[str, Any], **web_kw: Any) -> dict[str, Any]:
    return pod(name, ns, [web(readinessProbe={**probe, "periodSeconds": 2}, **web_kw)])


def _exec_pod(name: str, ns: str, command: list[str]) -> dict[str, Any]:
    return pod(
        name,
        ns,
        [
            busybox(
                "worker", SLEEP, readinessProbe={"exec": {"command": command}, "periodSeconds": 2}
            )
        ],
    )


def path_pod_set(ns: str) -> list[dict[str, Any]]:
    """Targets that answer the same every time, for comparing the paths to them."""
    return [
        _readiness("static", ns, _http("/index.html")),
        _readiness("cgi", ns, _http("/cgi-bin/healthz")),
        _readiness("hop", ns, _http("/cgi-bin/hop")),
        _readiness("redirect", ns, _http("/cgi-bin/redirect")),
        _readiness("sick", ns, _http("/cgi-bin/healthz"), script=web_script(sick_after=0)),
        _readiness("slow", ns, {**_http("/cgi-bin/slow"), "timeoutSeconds": 1}),
        _readiness("tcp-open", ns, {"tcpSocket": {"port": HTTP_PORT}}),
        _readiness("tcp-closed", ns, {"tcpSocket": {"port": HTTP_PORT + 1}}),
        pod(
            "grpc",
            ns,
            [grpc_app(flip="0s", readinessProbe={"grpc": {"port": GRPC_PORT}, "periodSeconds": 2})],
        ),
        _exec_pod("exec-ok", ns, ["echo", "hello"]),
        _exec_pod("exec-fail", ns, ["sh", "-c", "echo nope; exit 3"]),
    ]
