"""Read the kubelet's own counts from `https://NODE_IP:10250/metrics/probes`, as metrics-server.

The kubelet serves its prober's `prober_probe_total` (and `process_start_time_seconds`) on
`/metrics/probes` (`InstallDefaultHandlers` in pkg/kubelet/server/server.go), behind its
authentication and authorization filter: a bearer token checked by a TokenReview, then a
SubjectAccessReview for `get nodes/metrics` (every `/metrics...` path maps to that subresource).
The agent sends its ServiceAccount token, read again every minute and after a 401
(`credentials.FileTokenSource`, as the cluster view's in-cluster config does), and verifies the
kubelet's serving certificate with the ServiceAccount's `ca.crt`, which works where the kubelets'
certificates are issued by the cluster's CA (`serverTLSBootstrap`) and name the node's IP;
`--kubelet-insecure-tls` skips that, as metrics-server's flag of that name does. No proxy: the
kubelet is on this node.

The body is read up to `MAX_BODY`; every failure is a `ScrapeError` whose text is one line naming
what answered, and the fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import aiohttp

from probetui.agent.promtext import Sample, read
from probetui.probe.gotext import join_host_port
from probetui.runtime.kubernetes.transport import go_ssl_context

if TYPE_CHECKING:
    from probetui.runtime.kubernetes.credentials import TokenSource

PROBES_PATH = "/metrics/probes"
METRICS_PATH = "/metrics"
MAX_BODY = 8 << 20
TIMEOUT = 5.0  # seconds for one scrape, connect to last byte
TOTAL = "prober_probe_total"
START = "process_start_time_seconds"
BUILD_INFO = "kubernetes_build_info"
RESULTS = ("successful", "failed", "unknown")

# (pod UID, container, probe type as the kubelet labels it: Liveness, Readiness, Startup)
SeriesKey = tuple[str, str, str]
# the same by (namespace, pod name, container, probe type)
NameKey = tuple[str, str, str, str]


class Counter(NamedTuple):
    """Holds what one `prober_probe_total` series counts: whose probe, and which result."""

    key: SeriesKey
    name: NameKey
    result: str


# a series' text (a sample line up to its value) -> what it is to the counts, as the last read
# of the same kubelet worked it out (`_meaning`)
SeriesCache = dict[str, "Counter | str | None"]
_START = "start"


class ScrapeError(Exception):
    """Signals a scrape that gave no counts. `kind`: unauthorized, forbidden, not-found,
    unreachable, tls, timeout, status, body; the text is one line with what to do."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind


@dataclass(slots=True)
class KubeletCounts:
    """Holds one scrape: per probe the kubelet's counters, by result."""

    t: float  # when the answer was read
    start: float | None  # the kubelet process's start (process_start_time_seconds)
    series: dict[SeriesKey, dict[str, int]] = field(default_factory=dict)
    # the same series by (namespace, pod name, container, probe type): a static pod's counters
    # carry the kubelet's own UID, which is not its mirror pod's
    by_name: dict[NameKey, dict[str, int]] = field(default_factory=dict)
    skipped: int = 0  # sample lines that did not parse


def counts_from(text: str, t: float, known: SeriesCache | None = None) -> KubeletCounts:
    """Return the counters in a `/metrics/probes` body (`known`: as `promtext.read`'s, what
    each series counts as the last scrape of this kubelet worked it out)."""
    reading = read(text, (TOTAL, START), _meaning, known)
    out = KubeletCounts(t=t, start=None, skipped=reading.skipped)
    series, by_name = out.series, out.by_name
    for what, number in reading.items:
        if what is _START:
            out.start = number
        elif what is not None:
            key, name, result = what
            counts = series.get(key)
            if counts is None:
                counts = series[key] = dict.fromkeys(RESULTS, 0)
            counts[result] = int(number) if number == number and abs(number) < 2**53 else 0
            by_name[name] = counts
    return out


def _meaning(sample: Sample) -> Counter | str | None:
    """What one series of the body is to the counts: the kubelet's start, one probe's counter
    of one result, or None (a counter of no probe type or result the kubelet writes)."""
    if sample.name == START:
        return _START
    labels = sample.labels
    result = labels.get("result")
    probe_type = labels.get("probe_type", "")
    if result not in RESULTS or probe_type not in _PROBE_TYPES:
        return None
    container = labels.get("container", "")
    return Counter(
        (labels.get("pod_uid", ""), container, probe_type),
        (labels.get("namespace", ""), labels.get("pod", ""), container, probe_type),
        result,
    )


_PROBE_TYPES = frozenset(("Liveness", "Readiness", "Startup"))


class KubeletClient:
    """Reads one kubelet's `/metrics/probes` with a ServiceAccount token."""

    def __init__(
        self,
        node_ip: str,
        port: int,
        token: TokenSource,
        *,
        ca_file: str | Path | None,
        insecure: bool = False,
        timeout: float = TIMEOUT,
        node: str = "",
    ) -> None:
        self.base = f"https://{join_host_port(node_ip, str(port))}"
        self.url = self.base + PROBES_PATH
        self.node = node
        self.token = token
        self.ca_file = str(ca_file) if ca_file is not None else None
        self.insecure = insecure
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._known: SeriesCache = {}  # the last scrape's series, worked out

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            if self.insecure:
                context = go_ssl_context(verify=False)
            else:
                try:
                    context = go_ssl_context(cafile=self.ca_file)
                except (OSError, ValueError) as e:
                    raise ScrapeError(
                        "tls",
                        f"cannot load the CA {self.ca_file} to verify the kubelet: {e} (mount the "
                        "ServiceAccount's ca.crt, or run with --kubelet-insecure-tls)",
                    ) from None
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=context, limit=2),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                trust_env=False,  # the kubelet is on this node: never through a proxy
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def probes(self) -> KubeletCounts:
        """Return one scrape of `/metrics/probes`; ScrapeError when it gives nothing."""
        text = await self._get(self.url, MAX_BODY)
        return counts_from(text, time.time(), self._known)

    async def version(self) -> str | None:
        """Return the kubelet's gitVersion (`kubernetes_build_info` on `/metrics`), or None."""
        try:
            text = await self._get(self.base + METRICS_PATH, MAX_BODY, until=BUILD_INFO)
        except ScrapeError:
            return None
        for line in text.split("\n"):
            if line.startswith(BUILD_INFO + "{"):
                from probetui.agent.promtext import PromTextError, parse_line

                with contextlib.suppress(PromTextError):
                    version = parse_line(line).labels.get("git_version")
                    if version:
                        return version
        return None

    async def _get(self, url: str, limit: int, until: str | None = None) -> str:
        session = self._client()
        token = await self.token.token()
        sent = f"Bearer {token}" if token else None
        headers = {"Authorization": sent} if sent else {}
        started = time.time()
        where = f"the kubelet at {url}"
        try:
            async with session.get(url, headers=headers, allow_redirects=False) as resp:
                if resp.status != 200:
                    said = (await resp.content.read(512)).decode("utf-8", "replace")
                    said = " ".join(said.split())[:200]
                    if resp.status == 401:
                        self.token.unauthorized(sent, started)
                    raise ScrapeError(*_refusal(resp.status, said, where))
                chunks: list[bytes] = []
                size = 0
                while True:
                    # what has arrived, as it arrived: a read of a fixed size would copy the
                    # rest of a large buffered chunk again each time
                    chunk = await resp.content.readany()
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > limit:
                        if until is not None:
                            break
                        raise ScrapeError(
                            "body",
                            f"{where} sent more than {limit >> 20} MiB: not read (too many "
                            "probes on one node to count here)",
                        )
                    chunks.append(chunk)
                    if until is not None and until.encode() in chunk:
                        # the line may straddle chunks: one more read completes it
                        more = await resp.content.readany()
                        chunks.append(more)
                        break
        except ScrapeError:
            raise
        except (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError) as e:
            raise ScrapeError(
                "tls",
                f"{where}: TLS verification failed ({_short(e)}): its serving certificate is not "
                "issued by the cluster's CA for this node's IP (turn on serverTLSBootstrap for "
                "the kubelets, or run the agent with --kubelet-insecure-tls)",
            ) from None
        except aiohttp.ClientConnectorError as e:
            raise ScrapeError(
                "unreachable",
                f"cannot connect to {where} ({_short(e)}): check --kubelet-port and the NODE_IP "
                "the agent was given (the kubelet listens on its address setting)",
            ) from None
        except TimeoutError:
            raise ScrapeError(
                "timeout", f"{where} did not answer within {self.timeout:g}s"
            ) from None
        except (aiohttp.ClientError, OSError) as e:
            raise ScrapeError("unreachable", f"{where}: {_short(e)}") from None
        return b"".join(chunks).decode("utf-8", "replace")


def _refusal(status: int, said: str, where: str) -> tuple[str, str]:
    told = f": {said}" if said else ""
    if status == 401:
        return (
            "unauthorized",
            f"{where} refused the agent's ServiceAccount token (401{told}): the kubelet must "
            "authenticate bearer tokens (authentication.webhook.enabled: true)",
        )
    if status == 403:
        return (
            "forbidden",
            f"{where} refused the agent (403{told}): its ServiceAccount needs get on "
            "nodes/metrics (the ClusterRole of `probetui agent --print-manifest`)",
        )
    if status == 404:
        return (
            "not-found",
            f"{where} has no {PROBES_PATH} (404): this kubelet does not serve its prober's "
            "counts; the shadow's are shown alone",
        )
    return "status", f"{where} answered HTTP {status}{told}"


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text[:200] if text else type(e).__name__


async def wait_closed(client: KubeletClient) -> None:
    """Close `client`'s session; for the agent's way out."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.close(), 2.0)


__all__ = [
    "MAX_BODY",
    "PROBES_PATH",
    "KubeletClient",
    "KubeletCounts",
    "ScrapeError",
    "counts_from",
    "wait_closed",
]
