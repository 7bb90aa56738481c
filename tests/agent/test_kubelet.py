"""Reading the kubelet's /metrics/probes as the agent does: token, TLS, refusals, bounds.

Against a real HTTPS server on 127.0.0.1 that answers as the kubelet's authn/authz filter
(`InstallAuthFilter` in pkg/kubelet/server/server.go) does: 401 for a token it cannot
authenticate, 403 with its "Forbidden (user=..., verb=get, resource=nodes, subresource=metrics)"
for one RBAC does not allow.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import trustme

from probetui.agent import kubelet as kubelet_module
from probetui.agent.kubelet import KubeletClient, ScrapeError
from probetui.runtime.kubernetes.credentials import FileTokenSource
from tests.agent.conftest import SA_TOKEN, FakeKubelet


def _client(sa_dir: Path, port: int, **kwargs: object) -> KubeletClient:
    return KubeletClient(
        "127.0.0.1",
        port,
        FileTokenSource(sa_dir / "token"),
        ca_file=sa_dir / "ca.crt",
        **kwargs,  # type: ignore[arg-type]
    )


async def test_counts_with_the_service_account_token(sa_dir: Path, kubelet: FakeKubelet) -> None:
    kubelet.counts[("u-1", "shop", "web", "app", "Readiness")] = {"successful": 3, "failed": 1}
    client = _client(sa_dir, kubelet.port)
    try:
        counts = await client.probes()
        assert counts.series[("u-1", "app", "Readiness")] == {
            "successful": 3,
            "failed": 1,
            "unknown": 0,
        }
        assert counts.start == kubelet.start
        assert await client.version() == "v1.35.4"
    finally:
        await client.close()
    assert kubelet.seen == [f"Bearer {SA_TOKEN}"] * 2


async def test_an_rbac_refusal_says_what_to_grant(sa_dir: Path, kubelet: FakeKubelet) -> None:
    kubelet.denied.add(SA_TOKEN)
    client = _client(sa_dir, kubelet.port)
    try:
        with pytest.raises(ScrapeError) as refused:
            await client.probes()
    finally:
        await client.close()
    assert refused.value.kind == "forbidden"
    text = str(refused.value)
    assert "403" in text and "subresource=metrics" in text and "get on nodes/metrics" in text
    assert "\n" not in text


async def test_a_refused_token_is_read_again_at_once(sa_dir: Path, kubelet: FakeKubelet) -> None:
    (sa_dir / "token").write_text("expired-token\n")
    client = _client(sa_dir, kubelet.port)
    try:
        with pytest.raises(ScrapeError) as refused:
            await client.probes()
        assert refused.value.kind == "unauthorized" and "webhook" in str(refused.value)
        # the kubelet rotated it: the next scrape reads the file again, not a minute later
        (sa_dir / "token").write_text(SA_TOKEN + "\n")
        await client.probes()
    finally:
        await client.close()
    assert kubelet.seen == ["Bearer expired-token", f"Bearer {SA_TOKEN}"]


async def test_a_kubelet_without_the_endpoint(sa_dir: Path, kubelet: FakeKubelet) -> None:
    kubelet.status = 404
    client = _client(sa_dir, kubelet.port)
    try:
        with pytest.raises(ScrapeError, match="no /metrics/probes") as refused:
            await client.probes()
    finally:
        await client.close()
    assert refused.value.kind == "not-found"


async def test_nothing_listening(sa_dir: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = _client(sa_dir, port)
    try:
        with pytest.raises(ScrapeError, match="--kubelet-port") as refused:
            await client.probes()
    finally:
        await client.close()
    assert refused.value.kind == "unreachable"


async def test_a_serving_certificate_the_cluster_ca_did_not_issue(
    sa_dir: Path, kubelet: FakeKubelet
) -> None:
    trustme.CA().cert_pem.write_to_path(str(sa_dir / "ca.crt"))  # another CA
    client = _client(sa_dir, kubelet.port)
    try:
        with pytest.raises(ScrapeError, match="--kubelet-insecure-tls") as refused:
            await client.probes()
        assert refused.value.kind == "tls"
    finally:
        await client.close()
    # as metrics-server's flag of that name: not verified, still the same token
    insecure = _client(sa_dir, kubelet.port, insecure=True)
    try:
        await insecure.probes()
    finally:
        await insecure.close()
    assert kubelet.seen == [f"Bearer {SA_TOKEN}"]


async def test_a_body_past_the_limit_is_not_read(
    sa_dir: Path, kubelet: FakeKubelet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kubelet_module, "MAX_BODY", 1000)
    for i in range(50):
        kubelet.counts[(f"u-{i}", "shop", f"web-{i}", "app", "Readiness")] = {"successful": i}
    client = _client(sa_dir, kubelet.port)
    try:
        with pytest.raises(ScrapeError, match="more than") as refused:
            await client.probes()
    finally:
        await client.close()
    assert refused.value.kind == "body"
