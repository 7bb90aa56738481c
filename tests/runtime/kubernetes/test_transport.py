"""Every client reaches the API server the same way: TLS server name, proxy, TLS verification.

Pinned upstream behaviour:
- client-go gives every client of a rest.Config one transport (`rest/transport.go`
  `TransportConfig`, `transport/cache.go`): `tls-server-name`, `proxy-url` and, without it,
  Go's `http.ProxyFromEnvironment` (HTTPS_PROXY for an https server, websockets included: Go
  has no WSS_PROXY; never for localhost or loopback; NO_PROXY exempts) apply to list and watch,
  the exec and port-forward upgrades and pods/proxy alike.
- Go's crypto/x509 (what kubectl verifies with) accepts a CA without keyUsage or with a
  non-critical basicConstraints, which OpenSSL's VERIFY_X509_STRICT (on by default in Python
  3.13) refuses, and takes any certificate in the CA pool as a trust anchor, an intermediate
  too (OpenSSL's VERIFY_X509_PARTIAL_CHAIN).

Servers and proxies are real and on 127.0.0.1; a name like kube.internal is only ever reached
through the test's proxy, which dials 127.0.0.1, and name lookups other than localhost fail
inside the process (`no_dns`), so a client that skipped the proxy fails without a query.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from probetui.runtime.kubernetes.config import KubeconfigError
from tests.kube.emulator import ApiEmulator, TlsIdentity, make_pod
from tests.kube.emulator.fixtures import EchoServer, HttpTarget
from tests.runtime.kubernetes.paths import Clients, clients_of, target_for

NAME = "kube.internal"


@pytest.fixture
def no_dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real = socket.getaddrinfo

    def local_only(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        with contextlib.suppress(ValueError, TypeError):
            ipaddress.ip_address(name)
            return real(host, *args, **kwargs)
        if name in (None, "localhost"):
            return real(host, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, f"tests make no DNS queries ({name})")

    monkeypatch.setattr(socket, "getaddrinfo", local_only)
    yield


@dataclass
class ConnectProxy:
    """An HTTP CONNECT proxy on 127.0.0.1 that takes every tunnel to 127.0.0.1:PORT."""

    port: int = 0
    tunnels: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


@pytest.fixture
async def connect_proxy() -> AsyncIterator[ConnectProxy]:
    proxy = ConnectProxy()
    tasks: set[asyncio.Task[Any]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
            if method != "CONNECT":
                writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                writer.close()
                return
            proxy.tunnels.append(target)
            port = int(target.rpartition(":")[2])
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            both = [
                asyncio.ensure_future(_pipe(reader, up_writer)),
                asyncio.ensure_future(_pipe(up_reader, writer)),
            ]
            tasks.update(both)
            await asyncio.gather(*both)
        except (ConnectionError, OSError, asyncio.IncompleteReadError, ValueError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    try:
        yield proxy
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 1.0)


def _reachable(api: ApiEmulator, echo: EchoServer, target: HttpTarget) -> None:
    api.add_pod(make_pod("web"))
    api.map_port("web", 8080, echo.port)
    api.map_port("web", 8081, target.port)


async def every_path_works(c: Clients) -> None:
    assert await c.list_status() == 200
    assert (await c.exec(["true"])).exit_code == 0
    assert await c.forward(8080) == b"ping"
    assert await c.relay(8081) == 200


# -- tls-server-name and proxies -----------------------------------------------------------------


async def test_tls_server_name_is_verified_by_every_client(
    tmp_path: Path, echo_server: EchoServer, http_target: HttpTarget
) -> None:
    # the certificate names kube.internal only; the kubeconfig dials 127.0.0.1
    async with ApiEmulator(tls=True, tls_names=(NAME,)) as api:
        _reachable(api, echo_server, http_target)
        target = target_for(api, tmp_path, cluster={"tls-server-name": NAME})
        async with clients_of(target) as c:
            await every_path_works(c)
        assert {r.subresource for r in api.requests} >= {"", "exec", "portforward", "proxy"}


async def test_proxy_url_carries_every_client(
    tmp_path: Path,
    echo_server: EchoServer,
    http_target: HttpTarget,
    connect_proxy: ConnectProxy,
    no_dns: None,
) -> None:
    async with ApiEmulator(tls=True, tls_names=(NAME,)) as api:
        _reachable(api, echo_server, http_target)
        server = f"https://{NAME}:{api.port}"
        target = target_for(
            api, tmp_path, cluster={"server": server, "proxy-url": connect_proxy.url}
        )
        async with clients_of(target) as c:
            await every_path_works(c)
    # kube.internal resolves nowhere: every request above went through the proxy
    assert set(connect_proxy.tunnels) == {f"{NAME}:{api.port}"}
    assert len(connect_proxy.tunnels) >= 3  # the REST session, and one per websocket


async def test_proxy_url_wins_over_the_environment(
    tmp_path: Path,
    echo_server: EchoServer,
    http_target: HttpTarget,
    connect_proxy: ConnectProxy,
    no_dns: None,
) -> None:
    refuser = socket.socket()
    refuser.bind(("127.0.0.1", 0))  # bound, never listening: a proxy that is not there
    dead = f"http://127.0.0.1:{refuser.getsockname()[1]}"
    try:
        async with ApiEmulator(tls=True, tls_names=(NAME,)) as api:
            _reachable(api, echo_server, http_target)
            target = target_for(
                api,
                tmp_path,
                cluster={"server": f"https://{NAME}:{api.port}", "proxy-url": connect_proxy.url},
                environ={"HTTPS_PROXY": dead, "HTTP_PROXY": dead},
            )
            async with clients_of(target) as c:
                await every_path_works(c)
    finally:
        refuser.close()
    assert connect_proxy.tunnels


async def test_https_proxy_environment_carries_websockets_too(
    tmp_path: Path,
    echo_server: EchoServer,
    http_target: HttpTarget,
    connect_proxy: ConnectProxy,
    no_dns: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Go's ProxyFromEnvironment takes HTTPS_PROXY for the wss:// upgrade; there is no WSS_PROXY."""
    for name in ("WSS_PROXY", "wss_proxy", "WS_PROXY", "ws_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", connect_proxy.url)
    async with ApiEmulator(tls=True, tls_names=(NAME,)) as api:
        _reachable(api, echo_server, http_target)
        target = target_for(
            api,
            tmp_path,
            cluster={"server": f"https://{NAME}:{api.port}"},
            environ={"HTTPS_PROXY": connect_proxy.url},
        )
        async with clients_of(target) as c:
            await every_path_works(c)
    assert set(connect_proxy.tunnels) == {f"{NAME}:{api.port}"}


async def test_a_socks_proxy_url_is_refused_in_one_line(tmp_path: Path) -> None:
    async with ApiEmulator() as api:
        target = target_for(api, tmp_path, cluster={"proxy-url": "socks5://127.0.0.1:1080"})
        with pytest.raises(KubeconfigError, match="http and https proxies only"):
            await target.api_client()


@pytest.mark.parametrize(
    ("url", "environ", "expected"),
    [
        ("https://kube.example:6443", {"HTTPS_PROXY": "http://p:3128"}, "http://p:3128"),
        ("https://kube.example:6443", {"https_proxy": "p:3128"}, "http://p:3128"),
        ("wss://kube.example:6443", {"HTTPS_PROXY": "http://p:3128"}, "http://p:3128"),
        ("https://kube.example:6443", {"HTTP_PROXY": "http://p:3128"}, None),
        ("http://kube.example:8080", {"HTTP_PROXY": "http://p:3128"}, "http://p:3128"),
        ("https://kube.example", {"HTTPS_PROXY": "http://p", "WSS_PROXY": "x"}, "http://p"),
        ("https://kube.example", {"ALL_PROXY": "http://p"}, None),
        # never for localhost or a loopback address
        ("https://localhost:6443", {"HTTPS_PROXY": "http://p"}, None),
        ("https://127.0.0.2:6443", {"HTTPS_PROXY": "http://p"}, None),
        ("https://[::1]:6443", {"HTTPS_PROXY": "http://p"}, None),
        # NO_PROXY: a domain and its subdomains, .domain for subdomains only, IP, CIDR, port
        ("https://kube.example", {"HTTPS_PROXY": "http://p", "NO_PROXY": "kube.example"}, None),
        ("https://a.kube.example", {"HTTPS_PROXY": "http://p", "NO_PROXY": "kube.example"}, None),
        (
            "https://kube.example",
            {"HTTPS_PROXY": "http://p", "NO_PROXY": ".kube.example"},
            "http://p",
        ),
        ("https://a.kube.example", {"HTTPS_PROXY": "http://p", "no_proxy": "*.kube.example"}, None),
        ("https://10.1.2.3:6443", {"HTTPS_PROXY": "http://p", "NO_PROXY": "10.0.0.0/8"}, None),
        ("https://10.1.2.3:6443", {"HTTPS_PROXY": "http://p", "NO_PROXY": "10.1.2.3"}, None),
        (
            "https://kube.example:6443",
            {"HTTPS_PROXY": "http://p", "NO_PROXY": "kube.example:443"},
            "http://p",
        ),
        ("https://kube.example", {"HTTPS_PROXY": "http://p", "NO_PROXY": "kube.example:443"}, None),
        ("https://kube.example", {"HTTPS_PROXY": "http://p", "NO_PROXY": "*"}, None),
        (
            "https://kube.example",
            {"HTTPS_PROXY": "http://p", "NO_PROXY": "other, ,x.y"},
            "http://p",
        ),
    ],
)
def test_proxy_from_environment_is_gos(
    url: str, environ: dict[str, str], expected: str | None
) -> None:
    from probetui.runtime.kubernetes.transport import proxy_for, proxy_from_environment

    assert proxy_from_environment(url, environ) == expected
    assert proxy_for(url, "http://explicit:1", environ) == "http://explicit:1"


# -- TLS verification as Go's ------------------------------------------------------------------


def strict_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make create_default_context what Python 3.13 makes it: VERIFY_X509_STRICT and
    VERIFY_X509_PARTIAL_CHAIN on."""
    real = ssl.create_default_context

    def as_313(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        context = real(*args, **kwargs)
        context.verify_flags |= ssl.VERIFY_X509_STRICT | ssl.VERIFY_X509_PARTIAL_CHAIN
        return context

    monkeypatch.setattr(ssl, "create_default_context", as_313)


def _context_of(client: ApiClient) -> ssl.SSLContext:
    connector = client.rest_client.pool_manager.connector
    context = connector._ssl  # the one context every connection of the client uses
    assert isinstance(context, ssl.SSLContext)
    return context


async def test_client_tls_context_has_gos_verify_flags_on_python_313(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    strict_by_default(monkeypatch)
    async with ApiEmulator(tls=True) as api:
        target = target_for(api, tmp_path)
        async with clients_of(target) as c:
            for client in (c.api, c.ws):
                flags = _context_of(client).verify_flags
                assert not flags & ssl.VERIFY_X509_STRICT
                assert flags & ssl.VERIFY_X509_PARTIAL_CHAIN


def _ca_without_key_usage(critical: bool) -> TlsIdentity:
    """A CA as some clusters' installers make it: no keyUsage, basicConstraints maybe not
    critical."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ca without key usage")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=critical)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return TlsIdentity(
        chain_pem=leaf.public_bytes(pem),
        key_pem=key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        ca_pem=ca.public_bytes(pem),
    )


async def _handshake(port: int, context: ssl.SSLContext) -> None:
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    writer.close()


@pytest.mark.parametrize(
    ("critical", "strict_says"),
    [
        (False, "Basic Constraints of CA cert not marked critical"),
        (True, "CA cert does not include key usage extension"),
    ],
)
async def test_a_ca_without_key_usage_is_trusted_as_go_trusts_it(
    tmp_path: Path,
    echo_server: EchoServer,
    http_target: HttpTarget,
    monkeypatch: pytest.MonkeyPatch,
    critical: bool,
    strict_says: str,
) -> None:
    identity = _ca_without_key_usage(critical)
    async with ApiEmulator(tls_identity=identity) as api:
        _reachable(api, echo_server, http_target)
        # the premise: OpenSSL's strict mode refuses this CA, the default mode takes it
        strict = ssl.create_default_context(cadata=identity.ca_pem.decode())
        strict.verify_flags |= ssl.VERIFY_X509_STRICT
        with pytest.raises(ssl.SSLCertVerificationError, match=strict_says):
            await _handshake(api.port, strict)
        await _handshake(api.port, ssl.create_default_context(cadata=identity.ca_pem.decode()))
        strict_by_default(monkeypatch)
        target = target_for(api, tmp_path)
        async with clients_of(target) as c:
            await every_path_works(c)


async def test_an_intermediate_ca_alone_is_a_trust_anchor_as_in_go(
    tmp_path: Path, echo_server: EchoServer, http_target: HttpTarget
) -> None:
    import base64

    import trustme

    root = trustme.CA()
    intermediate = root.create_child_ca()
    leaf = intermediate.issue_cert("127.0.0.1", "localhost")
    identity = TlsIdentity(
        chain_pem=b"".join(blob.bytes() for blob in leaf.cert_chain_pems),
        key_pem=leaf.private_key_pem.bytes(),
        ca_pem=intermediate.cert_pem.bytes(),
    )
    async with ApiEmulator(tls_identity=identity) as api:
        _reachable(api, echo_server, http_target)
        # the kubeconfig trusts the intermediate only, not the root above it
        ca = base64.b64encode(intermediate.cert_pem.bytes()).decode()
        target = target_for(api, tmp_path, cluster={"certificate-authority-data": ca})
        async with clients_of(target) as c:
            await every_path_works(c)
