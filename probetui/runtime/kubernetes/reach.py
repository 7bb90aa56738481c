"""Reach pods: how a shadow attempt gets to a container, and what the path refused.

`--via direct` dials the pod IP; `port-forward` opens one API server port-forward stream per
attempt; `proxy` carries plain HTTP probes through `pods/proxy`. Exec probes go through
`pods/exec`. A path the user may not open (403) makes the attempt an error that says
"forbidden", remembered for a minute per namespace so as not to ask on every attempt, and what
RBAC must grant for the server's version (read from `/version` at the first refusal: exec and
port-forward need `get`, and `create` too from 1.35). In `--read-only` mode only `direct` probes
run, and only where the pod network is reachable (in a cluster, or when `--via direct` says so);
exec never runs (`not_probed` says why).

`Reacher` is what `KubernetesRuntime` delegates its `reach`, `reach_refused`, `reach_lingered`,
`close_linger`, `exec_runner`, `attempt_via`, `not_probed` and `rbac_needs` to.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from probetui.probe.gotext import join_host_port
from probetui.runtime.kubernetes.config import ClusterTarget
from probetui.spec.model import (
    Container,
    ExecAction,
    HTTPGetAction,
    Pod,
    ProbeType,
    TCPSocketAction,
)

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient, CoreV1Api

    from probetui.probe.exec import ExecOutput, ExecRunner

log = logging.getLogger(__name__)

VIAS = ("direct", "port-forward", "proxy")
# how long a 403 for pods/portforward, pods/proxy or pods/exec is believed without asking again
FORBIDDEN_TTL = 60.0
# pods/proxy relays kept for judging their attempt; past this, the finished ones are dropped
MAX_RELAYS = 4096
PORT_FORWARD_LINGER = 1.0
# /version is asked once, for a 403's message: it must not hold the attempt up for long
VERSION_TIMEOUT = 2.0


class Reacher:
    """Opens the paths to pods for one cluster target and one `--via`.

    The API clients come with `connect` once the runtime has them; until then (and for
    `_ws_core`, always in `--read-only`) the paths that need them say they are not available.
    """

    def __init__(self, target: ClusterTarget, via: str | None = None) -> None:
        self.target = target
        self.read_only = target.read_only
        self.via_explicit = via is not None
        self.via = via or ("direct" if target.in_cluster else "port-forward")
        # why exec probes are not run here, where no path to run them is given (a node agent
        # has neither pods/exec nor the CRI socket); None: they run through pods/exec
        self.exec_not_run: str | None = None
        if self.via not in VIAS:
            raise ValueError(f"--via must be one of {', '.join(VIAS)}")
        self._api: ApiClient | None = None
        self._core: CoreV1Api | None = None
        self._ws_core: CoreV1Api | None = None
        self._forbidden: dict[tuple[str, str], tuple[float, str]] = {}
        # pods/proxy relays by the address they listen on, until their attempt has been judged
        self._relays: dict[str, Any] = {}
        # the API server's (major, minor), once a refusal made it worth asking /version
        self.server_version: tuple[int, int] | None = None
        self._version_lookup: asyncio.Future[tuple[int, int] | None] | None = None

    def connect(
        self, api: ApiClient | None, core: CoreV1Api | None, ws_core: CoreV1Api | None
    ) -> None:
        self._api = api
        self._core = core
        self._ws_core = ws_core

    # -- which probes run, and by which path ------------------------------------------------

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        probe = container.probe(probe_type)
        handler = probe.handler if probe is not None else None
        if isinstance(handler, ExecAction):
            if self.exec_not_run is not None:
                return self.exec_not_run
            if self.read_only:
                return "not run: read-only (exec runs a command in the container)"
            return None
        if self.read_only and self.via != "direct":
            return (
                f"not run: read-only allows no {self.via} (use --via direct where pod IPs are "
                "reachable)"
            )
        if self.read_only and not (self.target.in_cluster or self.via_explicit):
            return (
                "not run: read-only and pod IPs are likely unreachable from here (--via direct "
                "if they are)"
            )
        if self.via == "proxy":
            if not isinstance(handler, HTTPGetAction):
                return "not run: --via proxy carries HTTP probes only"
            if handler.scheme.upper() == "HTTPS":
                return "not run: --via proxy carries plain HTTP only (use --via port-forward)"
        if (
            self.via != "direct"
            and isinstance(handler, HTTPGetAction | TCPSocketAction)
            and handler.host
        ):
            return (
                f"not run: the probe dials host {handler.host}, which --via {self.via} "
                "cannot reach (--via direct dials it)"
            )
        return None

    def attempt_via(self, container: Container, probe_type: ProbeType) -> str:
        """Return the path one probe's attempts take: `self.via`, except exec, always `pods/exec`.

        For the engine to label attempts with (it labels every attempt with `self.via` today).
        """
        probe = container.probe(probe_type)
        if probe is not None and isinstance(probe.handler, ExecAction):
            return "pods/exec"
        return self.via

    # -- forbidden memory and RBAC hints ----------------------------------------------------

    def _forbidden_for(self, what: str, namespace: str) -> str | None:
        entry = self._forbidden.get((what, namespace))
        if entry is None:
            return None
        until, message = entry
        if time.monotonic() >= until:
            del self._forbidden[(what, namespace)]
            return None
        return message

    async def rbac_needs(self, what: str) -> str:
        """Tell what RBAC must grant on `what` ("pods/exec") on this server, for a 403's message."""
        from probetui.runtime.kubernetes.streams import rbac_needs

        if self.server_version is None and self._api is not None:
            lookup = self._version_lookup
            if lookup is None or lookup.done():
                # refusals come together (port-forward and exec): one GET answers them all
                lookup = self._version_lookup = asyncio.ensure_future(
                    fetch_server_version(self._api)
                )
            self.server_version = await asyncio.shield(lookup)
        return rbac_needs(what, self.server_version)

    def _remember_forbidden(self, what: str, namespace: str, message: str) -> None:
        self._forbidden[(what, namespace)] = (time.monotonic() + FORBIDDEN_TTL, message)

    # -- the relays -------------------------------------------------------------------------

    def _probe_timeout(self, container: Container) -> float:
        return max(
            (float(p.timeout_seconds) for t in ProbeType if (p := container.probe(t)) is not None),
            default=1.0,
        )

    async def reach(self, pod: Pod, container: Container, host: str, port: int) -> tuple[str, int]:
        if self.via == "direct":
            return host, port
        from probetui.runtime.kubernetes.streams import ApiPathError, StreamError

        if self.via == "proxy":
            from probetui.runtime.kubernetes.proxy import OneShotProxy

            assert self._core is not None
            known = self._forbidden_for("pods/proxy", pod.namespace)
            if known is not None:
                raise ApiPathError(f"forbidden: {known}")
            relay = OneShotProxy(
                self._core,
                pod.namespace,
                pod.name,
                port,
                self._probe_timeout(container),
                on_forbidden=lambda msg: self._remember_forbidden("pods/proxy", pod.namespace, msg),
            )
            address = await relay.start()
            self._remember_relay(address, relay)
            return address
        from probetui.runtime.kubernetes.streams import OneShotForward

        core = self._ws_core
        if core is None:
            raise ApiPathError("port-forward is not available (read-only)")
        known = self._forbidden_for("pods/portforward", pod.namespace)
        if known is not None:
            raise ApiPathError(known)

        async def opener() -> Any:
            return await core.connect_get_namespaced_pod_portforward(
                pod.name, pod.namespace, ports=str(port), _preload_content=False
            )

        try:
            forward = OneShotForward(opener, self._probe_timeout(container), needs=self.rbac_needs)
            address = await forward.start()
            self._remember_relay(address, forward)
            return address
        except StreamError as e:
            if e.status == 403:
                self._remember_forbidden("pods/portforward", pod.namespace, str(e))
            raise ApiPathError(str(e)) from None

    def _remember_relay(self, address: tuple[str, int], relay: Any) -> None:
        if len(self._relays) >= MAX_RELAYS:
            # attempts that ended without being judged (cancelled): their relays are done
            self._relays = {k: r for k, r in self._relays.items() if not r.done.is_set()}
        self._relays[join_host_port(*address)] = relay

    @property
    def close_linger(self) -> float:
        """containerd's port-forward holds a connection the pod closed for up to a second
        (`portForward` in its CRI server waits that long for the other direction)."""
        return PORT_FORWARD_LINGER if self.via == "port-forward" else 0.0

    def reach_lingered(self, dialled: str) -> float:
        relay = self._relays.get(dialled)
        return float(getattr(relay, "lingered", 0.0))

    def reach_refused(self, dialled: str) -> str | None:
        """The API server's own answers are none of the container's: its 403 for pods/proxy
        makes the attempt that met it the same "forbidden" error as the attempts after it, and
        its 401 or 503 (`proxy.api_path_error`) an error of the path."""
        relay = self._relays.pop(dialled, None)
        if relay is None:
            return None
        if getattr(relay, "forbidden", None) is not None:
            return f"forbidden: {relay.forbidden}"
        return getattr(relay, "path_error", None)

    # -- exec -------------------------------------------------------------------------------

    def exec_runner(self, pod: Pod, container: Container) -> ExecRunner | None:
        core = self._ws_core

        async def run(argv: Sequence[str], timeout: float) -> ExecOutput:
            from probetui.probe.exec import ExecOutput
            from probetui.runtime.kubernetes.streams import exec_in_pod

            if core is None:
                return ExecOutput(b"", None, error="exec is not available (read-only)")
            known = self._forbidden_for("pods/exec", pod.namespace)
            if known is not None:
                return ExecOutput(b"", None, error=known)

            async def opener() -> Any:
                return await core.connect_get_namespaced_pod_exec(
                    pod.name,
                    pod.namespace,
                    command=list(argv),
                    container=container.name,
                    stderr=True,
                    stdout=True,
                    stdin=False,
                    tty=False,
                    _preload_content=False,
                )

            out = await exec_in_pod(opener, timeout, needs=self.rbac_needs)
            if out.error is not None and out.error.startswith("forbidden:"):
                self._remember_forbidden("pods/exec", pod.namespace, out.error)
            return out

        return run


async def fetch_server_version(api: ApiClient) -> tuple[int, int] | None:
    """(major, minor) from `/version`; None when it cannot be had. "1" and "32+" (as GKE and EKS
    write the minor) or, failing those, gitVersion "v1.32.3-eks-..."."""
    from kubernetes_asyncio.client import VersionApi

    try:
        # raw: the generated model refuses an answer that leaves out any of its fields
        resp = await asyncio.wait_for(
            VersionApi(api).get_code(_preload_content=False), VERSION_TIMEOUT
        )
        try:
            info = json.loads(await resp.read()) if resp.status == 200 else {}
        finally:
            resp.release()
    except asyncio.CancelledError:
        raise
    except Exception as e:
        log.info("cannot read the API server's version: %s", e)
        return None
    if not isinstance(info, dict):
        return None
    major = "".join(ch for ch in str(info.get("major") or "") if ch.isdigit())
    minor = "".join(ch for ch in str(info.get("minor") or "") if ch.isdigit())
    if major and minor:
        return int(major), int(minor)
    git = str(info.get("gitVersion") or "").lstrip("v").split("-")[0].split(".")
    if len(git) >= 2 and git[0].isdigit() and git[1].isdigit():
        return int(git[0]), int(git[1])
    return None


__all__ = ["VIAS", "Reacher", "fetch_server_version"]
