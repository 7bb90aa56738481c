"""A cluster's identity, for a lock that holds for a cluster whatever its context is called:
the certificates of its CA (data or file, however the PEM is wrapped) and its server's
`scheme://host:port`. Read from the kubeconfig alone: no network, no DNS."""

from __future__ import annotations

import base64
import textwrap
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml

from probetui.runtime.kubernetes.config import ConnectOptions, resolve
from probetui.runtime.kubernetes.kubeconfig import ClusterIdentity, cluster_identity


@pytest.fixture(scope="module")
def ca() -> bytes:
    return trustme.CA().cert_pem.bytes()


@pytest.fixture(scope="module")
def other_ca() -> bytes:
    return trustme.CA().cert_pem.bytes()


def _data(pem: bytes) -> str:
    return base64.b64encode(pem).decode()


def _rewrapped(pem: bytes) -> bytes:
    """The same certificate, its base64 wrapped at 76 columns instead of 64, CRLF line ends."""
    body = b"".join(pem.split(b"-----")[2].split())
    lines = textwrap.wrap(body.decode(), 76)
    text = (
        "-----BEGIN CERTIFICATE-----\r\n" + "\r\n".join(lines) + "\r\n-----END CERTIFICATE-----\r\n"
    )
    return text.encode()


def test_the_same_ca_as_data_or_as_a_file_is_the_same_cluster(
    tmp_path: Path, ca: bytes, other_ca: bytes
) -> None:
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(_rewrapped(ca))
    by_data = cluster_identity(
        {"server": "https://10.0.0.1:6443", "certificate-authority-data": _data(ca)}
    )
    by_file = cluster_identity(
        {"server": "https://kube.example:443", "certificate-authority": str(ca_file)}
    )
    assert by_data is not None and by_file is not None
    assert by_data.has_ca and by_data.anchors == by_file.anchors
    assert by_data.same_cluster(by_file)
    # a bundle that holds the locked cluster's CA among others shares its trust
    bundle = cluster_identity(
        {"server": "https://elsewhere:6443", "certificate-authority-data": _data(other_ca + ca)}
    )
    assert bundle is not None and bundle.same_cluster(by_data)
    stranger = cluster_identity(
        {"server": "https://elsewhere:6443", "certificate-authority-data": _data(other_ca)}
    )
    assert stranger is not None and not stranger.same_cluster(by_data)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://Kube.Example", "https://kube.example:443/"),
        ("https://kube.example.:6443", "https://kube.example:6443/k8s/clusters/c-1"),
        ("http://10.0.0.1", "http://10.0.0.1:80"),
        ("https://[0:0::1]:6443", "https://[::1]:6443"),
    ],
)
def test_the_same_server_address_is_the_same_cluster(a: str, b: str, other_ca: bytes) -> None:
    first = cluster_identity({"server": a})
    second = cluster_identity({"server": b, "certificate-authority-data": _data(other_ca)})
    assert first is not None and second is not None
    assert first.address == second.address and first.same_cluster(second)


@pytest.mark.parametrize(
    ("extra", "server"),
    [
        ({}, "https://10.0.0.1:6443"),  # the system's roots
        ({"insecure-skip-tls-verify": True}, "https://10.0.0.1:6443"),
        ("ca", "http://10.0.0.1:8080"),  # no TLS at all: a CA verifies nothing
        ({"certificate-authority": "/nonexistent/ca.crt"}, "https://10.0.0.1:6443"),
        ({"certificate-authority-data": "not base64!"}, "https://10.0.0.1:6443"),
        ({"certificate-authority-data": _data(b"no PEM here")}, "https://10.0.0.1:6443"),
    ],
    ids=["system-roots", "insecure", "http", "unreadable-file", "bad-data", "no-pem"],
)
def test_a_cluster_without_a_ca_of_its_own(extra: Any, server: str, ca: bytes) -> None:
    entry = {"server": server}
    if extra == "ca":
        entry["certificate-authority-data"] = _data(ca)
    else:
        entry.update(extra)
    identity = cluster_identity(entry)
    assert identity is not None and not identity.has_ca


def test_resolve_gives_every_context_s_cluster_and_the_in_cluster_config_s(
    tmp_path: Path, ca: bytes
) -> None:
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("t")
    (sa / "ca.crt").write_bytes(ca)
    doc = {
        "clusters": [
            {
                "name": "prod",
                "cluster": {
                    "server": "https://10.0.0.1:6443",
                    "certificate-authority-data": _data(ca),
                },
            },
            {"name": "kind", "cluster": {"server": "https://127.0.0.1:40000"}},
        ],
        "users": [{"name": "u", "user": {"token": "x"}}],
        "contexts": [
            {"name": "prod-eu", "context": {"cluster": "prod", "user": "u"}},
            {"name": "dev-laptop", "context": {"cluster": "prod", "user": "u"}},
            {"name": "kind-kind", "context": {"cluster": "kind", "user": "u"}},
            {"name": "broken", "context": {"cluster": "missing", "user": "u"}},
        ],
        "current-context": "dev-laptop",
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(doc))
    env = {
        "HOME": str(tmp_path),
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
    }
    target = resolve(ConnectOptions(kubeconfig=str(path)), environ=env, service_account_dir=sa)
    assert set(target.clusters) == {"prod-eu", "dev-laptop", "kind-kind", None}
    mine = target.clusters["dev-laptop"]
    assert mine == ClusterIdentity("https://10.0.0.1:6443", mine.anchors) and mine.has_ca
    # the in-cluster config trusts the same CA: the same cluster, under another address
    assert target.clusters[None].address == "https://10.96.0.1:443"
    assert target.clusters[None].same_cluster(mine)
    assert not target.clusters["kind-kind"].same_cluster(mine)
