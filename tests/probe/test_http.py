"""HTTP handler (`pkg/probe/http`, docs/kubelet-behaviour.md §13, docs/test-vectors.md D1-D9)
against real servers on 127.0.0.1.

`http` here is the oracle on httpx (`tests/probe/http_oracle.py`); `test_http_lean.py` runs every
test of this module once more with the product's handler (`probetui.probe.http_lean`) in its
place and compares their Attempts.

Timeouts here are 0.2 s against servers that stall for seconds (and are cancelled at teardown),
so each deadline test takes about 0.2 s of real time: the deadline is what is under test.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Callable

import pytest
import trustme

from probetui.probe.base import MAX_OUTPUT_BYTES, Result, user_agent
from probetui.spec.model import HTTPHeader
from tests.probe import http_oracle as http
from tests.probe.http_servers import (
    LoopbackServer,
    SeenRequest,
    ca_signed_context,
    response,
    self_signed_context,
    send,
    serve,
)

pytestmark = pytest.mark.timeout(20)

UA = user_agent()
TIMEOUT_TEXT = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
BODY_TIMEOUT_TEXT = (
    "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
)
SHORT = 0.2  # probe timeout for deadline tests, seconds


def echo_headers(request: SeenRequest) -> str:
    # like upstream's echo handler: one "Name: value" line per header value
    return "".join(f"{k}: {v}\n" for k, v in request.headers)


async def d1_app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
    """The handlers of TestHTTPProbeChecker, one per path."""
    path = request.path
    if path == "/ok":
        await send(writer, response(200, "ok body"))
    elif path == "/echo":
        await send(writer, response(200, echo_headers(request)))
    elif path == "/host":
        await send(writer, response(200, request.get("Host") or ""))
    elif path == "/abort":
        return  # the connection ends with no response at all
    elif path == "/fail":
        await send(writer, response(500, "fail body"))
    elif path == "/slow":
        await asyncio.sleep(3)
    elif path.startswith("/redirect/"):
        # /redirect/<code>/<ok|fail>: one hop to /new/<ok|fail>
        _, _, code, outcome = path.split("/")
        await send(writer, response(int(code), "moved", [("Location", f"/new/{outcome}")]))
    elif path == "/new/ok":
        await send(writer, response(200, "new ok"))
    else:
        await send(writer, response(500, "new fail"))


@pytest.fixture
async def d1_server() -> AsyncIterator[LoopbackServer]:
    async with serve(d1_app) as server:
        yield server


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def refused_port() -> int:
    """A port that was bound and released, so nothing listens there."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# D1: TestHTTPProbeChecker (followNonLocalRedirects=true there)


@pytest.mark.parametrize(
    ("path", "headers", "result", "check"),
    [
        pytest.param("/ok", [], Result.SUCCESS, lambda o: "ok body" in o, id="1-ok-body"),
        pytest.param(
            "/echo",
            [("X-Muffins-Or-Cupcakes", "muffins")],
            Result.SUCCESS,
            lambda o: "X-Muffins-Or-Cupcakes: muffins" in o,
            id="2-custom-header",
        ),
        pytest.param(
            "/echo",
            [("User-Agent", "foo/1.0")],
            Result.SUCCESS,
            lambda o: "User-Agent: foo/1.0" in o,
            id="3-user-agent-override",
        ),
        pytest.param(
            "/echo",
            [("User-Agent", "")],
            Result.SUCCESS,
            lambda o: "User-Agent" not in o,
            id="4-empty-user-agent-sends-none",
        ),
        pytest.param(
            "/echo",
            [],
            Result.SUCCESS,
            lambda o: f"User-Agent: {UA}" in o and "User-Agent: kube-probe/" in o,
            id="5-default-user-agent",
        ),
        pytest.param(
            "/host",
            [("Host", "muffins.cupcakes.org")],
            Result.SUCCESS,
            lambda o: o == "muffins.cupcakes.org",
            id="6-host-header",
        ),
        pytest.param("/abort", [], Result.FAILURE, lambda o: o.endswith(": EOF"), id="7-abort"),
        pytest.param(
            "/fail",
            [],
            Result.FAILURE,
            lambda o: o == "HTTP probe failed with statuscode: 500",
            id="8-500",
        ),
        pytest.param("/redirect/301/ok", [], Result.SUCCESS, None, id="10-301-200"),
        pytest.param("/redirect/301/fail", [], Result.FAILURE, None, id="11-301-500"),
        pytest.param("/redirect/302/ok", [], Result.SUCCESS, None, id="12-302-200"),
        pytest.param("/redirect/302/fail", [], Result.FAILURE, None, id="13-302-500"),
        pytest.param("/redirect/307/ok", [], Result.SUCCESS, None, id="14-307-200"),
        pytest.param("/redirect/307/fail", [], Result.FAILURE, None, id="15-307-500"),
        pytest.param("/redirect/308/ok", [], Result.SUCCESS, None, id="16-308-200"),
        pytest.param("/redirect/308/fail", [], Result.FAILURE, None, id="17-308-500"),
    ],
)
async def test_vector_d1_http_probe_checker(
    d1_server: LoopbackServer,
    path: str,
    headers: list[tuple[str, str]],
    result: Result,
    check: Callable[[str], bool] | None,
) -> None:
    """Vector D1 / TestHTTPProbeChecker, every row but the timeout (see the next test)."""
    attempt = await http.probe(d1_server.url(path), headers, 1.0, follow_non_local_redirects=True)
    assert attempt.result is result, attempt
    assert attempt.error is None
    if check is not None:
        assert check(attempt.output), attempt.output


async def test_vector_d1_9_slow_server_times_out(d1_server: LoopbackServer) -> None:
    """Vector D1 row 9: a server slower than the timeout is a Failure whose output is Go's
    client timeout text, with no error return (§13.8)."""
    url = d1_server.url("/slow")
    attempt = await http.probe(url, timeout=SHORT, follow_non_local_redirects=True)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.timed_out
    assert attempt.output == f'Get "{url}": {TIMEOUT_TEXT}'
    assert SHORT <= attempt.latency < SHORT + 0.5
    assert attempt.status_code is None


async def test_vector_d1_7_abort_is_go_eof_text(d1_server: LoopbackServer) -> None:
    """Vector D1 row 7: a server that ends the connection without a response gives Go's
    `Get "<url>": EOF` as the Failure output."""
    url = d1_server.url("/abort")
    attempt = await http.probe(url)
    assert attempt.result is Result.FAILURE
    assert attempt.output == f'Get "{url}": EOF'
    assert not attempt.timed_out


async def test_spec_13_8_attempt_fields_on_success(d1_server: LoopbackServer) -> None:
    """§13.8: Success carries the body as output; the Attempt also records status, body,
    target, latency and start time for the UI."""
    url = d1_server.url("/ok")
    attempt = await http.probe(url)
    assert attempt.handler == "http"
    assert attempt.target == url
    assert attempt.result is Result.SUCCESS
    assert attempt.output == "ok body"
    assert attempt.status_code == 200
    assert attempt.body == "ok body"
    assert 0 < attempt.latency < 1.0
    assert attempt.started_at > 0
    assert not attempt.timed_out


async def test_spec_13_8_failure_keeps_body_out_of_output(d1_server: LoopbackServer) -> None:
    """§13.8 / kubernetes#99425: the failure message leaves the body out; the Attempt keeps it."""
    attempt = await http.probe(d1_server.url("/fail"))
    assert attempt.output == "HTTP probe failed with statuscode: 500"
    assert attempt.status_code == 500
    assert attempt.body == "fail body"


# ---------------------------------------------------------------------------------------------
# D2: TestHTTPProbeChecker_NonLocalRedirects


async def d2_app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
    """/redirect?loc=<target> answers 302 to <target>; /loop redirects to itself; /success is
    200 and anything else 500, as in upstream's test server."""
    if request.path == "/redirect":
        location = request.target.partition("loc=")[2]
        await send(writer, response(302, "redirect body", [("Location", location)]))
    elif request.path == "/loop":
        await send(writer, response(302, "", [("Location", "/loop")]))
    elif request.path == "/success":
        await send(writer, response(200, "success body"))
    else:
        await send(writer, response(500, "fail body"))


@pytest.fixture
async def d2_servers() -> AsyncIterator[tuple[LoopbackServer, LoopbackServer]]:
    async with serve(d2_app) as first, serve(d2_app) as other:
        yield first, other


@pytest.mark.parametrize("follow", [False, True], ids=["kubelet", "follow"])
@pytest.mark.parametrize(
    ("target", "kubelet", "following"),
    [
        pytest.param("/success", Result.SUCCESS, Result.SUCCESS, id="same-host-success"),
        pytest.param("/fail", Result.FAILURE, Result.FAILURE, id="same-host-fail"),
        pytest.param("other-port/success", Result.SUCCESS, Result.SUCCESS, id="other-port-ok"),
        pytest.param("other-port/fail", Result.FAILURE, Result.FAILURE, id="other-port-fail"),
        pytest.param("other-host/fail", Result.WARNING, Result.FAILURE, id="other-host-fail"),
        pytest.param("/loop", Result.FAILURE, Result.FAILURE, id="loop"),
    ],
)
async def test_vector_d2_non_local_redirects(
    d2_servers: tuple[LoopbackServer, LoopbackServer],
    follow: bool,
    target: str,
    kubelet: Result,
    following: Result,
) -> None:
    """Vector D2 / TestHTTPProbeChecker_NonLocalRedirects. The probe targets 127.0.0.1;
    "other host" is `localhost` (also loopback, but another hostname), "other port" is a second
    server on 127.0.0.1 (same hostname, so local: the port is ignored)."""
    first, other = d2_servers
    if target.startswith("other-port"):
        location = other.url(target.removeprefix("other-port"))
    elif target.startswith("other-host"):
        location = first.url(target.removeprefix("other-host"), host="localhost")
    else:
        location = target
    url = first.url(f"/redirect?loc={location}")
    attempt = await http.probe(url, follow_non_local_redirects=follow)
    assert attempt.result is (following if follow else kubelet), attempt
    assert attempt.error is None
    if target == "/loop":
        assert attempt.output == 'Get "/loop": stopped after 10 redirects'


async def test_spec_13_7_other_host_redirect_is_warning_with_body(
    d2_servers: tuple[LoopbackServer, LoopbackServer],
) -> None:
    """§13.7-13.8: a redirect to another hostname is not followed; the 3xx is the answer,
    a Warning whose output carries the redirect's body; nothing is sent to the other host."""
    first, _ = d2_servers
    location = first.url("/success", host="localhost")
    attempt = await http.probe(first.url(f"/redirect?loc={location}"))
    assert attempt.result is Result.WARNING
    assert attempt.output == "Probe terminated redirects, Response body: redirect body"
    assert attempt.status_code == 302
    assert attempt.body == "redirect body"
    assert [r.path for r in first.requests] == ["/redirect"]


async def test_spec_13_7_redirect_loop_stops_after_ten_requests(
    d2_servers: tuple[LoopbackServer, LoopbackServer],
) -> None:
    """§13.7: the chain holds at most 10 requests; the 10th redirect fails the probe with
    Go's error, whose URL is the Location as written."""
    first, _ = d2_servers
    attempt = await http.probe(first.url("/loop"))
    assert attempt.result is Result.FAILURE
    assert attempt.output == 'Get "/loop": stopped after 10 redirects'
    assert len(first.requests) == 10
    assert first.connections == 10


async def chain_app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
    """/hop/<n> redirects to /hop/<n-1>; /hop/0 is 200."""
    n = int(request.path.rsplit("/", 1)[1])
    if n:
        await send(writer, response(302, "", [("Location", f"/hop/{n - 1}")]))
    else:
        await send(writer, response(200, "done"))


@pytest.mark.parametrize("follow", [False, True])
async def test_spec_13_7_nine_redirects_are_followed_ten_are_not(follow: bool) -> None:
    """defaultCheckRedirect / RedirectChecker: `len(via) >= 10` stops the 11th request, so a
    chain of 9 redirects succeeds and a chain of 10 fails."""
    async with serve(chain_app) as server:
        ok = await http.probe(server.url("/hop/9"), follow_non_local_redirects=follow)
        assert ok.result is Result.SUCCESS
        assert ok.output == "done"
        assert len(server.requests) == 10
        too_long = await http.probe(server.url("/hop/10"), follow_non_local_redirects=follow)
        assert too_long.result is Result.FAILURE
        assert too_long.output == 'Get "/hop/0": stopped after 10 redirects'
        assert len(server.requests) == 20


@pytest.mark.parametrize("code", [300, 304, 305, 306, 399])
async def test_net_http_only_301_302_303_307_308_are_followed(code: int) -> None:
    """net/http redirectBehavior: other 3xx codes are final even with a Location: Warning."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(code, "", [("Location", "/elsewhere")]))

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"))
    assert attempt.result is Result.WARNING
    assert attempt.output == "Probe terminated redirects, Response body: "
    assert len(server.requests) == 1


async def test_net_http_unparsable_location_is_go_error() -> None:
    """net/http Client.do: a Location url.Parse refuses fails the probe with Go's text."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(302, "", [("Location", "http://[::1/x")]))

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"))
    assert attempt.result is Result.FAILURE
    assert attempt.output == (
        f'Get "{server.url("/")}": failed to parse Location header "http://[::1/x": '
        "parse \"http://[::1/x\": missing ']' in host"
    )


async def test_net_http_303_is_followed_and_redirect_without_location_is_final() -> None:
    """net/http Client.do: 303 is followed like 302; a 3xx with no Location is the answer."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        if request.path == "/see-other":
            await send(writer, response(303, "", [("Location", "/target")]))
        elif request.path == "/target":
            await send(writer, response(200, "target"))
        else:
            await send(writer, response(302, "no location"))

    async with serve(app) as server:
        followed = await http.probe(server.url("/see-other"))
        final = await http.probe(server.url("/no-location"))
    assert followed.result is Result.SUCCESS
    assert followed.output == "target"
    assert final.result is Result.WARNING
    assert final.output == "Probe terminated redirects, Response body: no location"


async def test_net_http_redirect_sends_referer_and_a_fresh_connection() -> None:
    """net/http Client.do: each hop is a new request with Referer set to the previous URL;
    DisableKeepAlives gives each hop its own TCP connection."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        if request.path == "/start":
            await send(writer, response(302, "", [("Location", "/end")]))
        else:
            await send(writer, response(200, "end"))

    async with serve(app) as server:
        attempt = await http.probe(server.url("/start"))
    assert attempt.result is Result.SUCCESS
    first, second = server.requests
    assert first.get("Referer") is None
    assert second.get("Referer") == server.url("/start")
    assert second.get("User-Agent") == UA
    assert server.connections == 2


@pytest.mark.parametrize(
    ("host", "sent"), [("127.0.0.1", True), ("localhost", False)], ids=["same", "other"]
)
async def test_net_http_authorization_only_follows_to_same_domain(host: str, sent: bool) -> None:
    """net/http shouldCopyHeaderOnRedirect: Authorization and Cookie go only to the same domain
    or a subdomain; other headers follow every redirect."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        if request.path == "/start":
            location = f"http://{host}:{writer.get_extra_info('sockname')[1]}/end"
            await send(writer, response(302, "", [("Location", location)]))
        else:
            await send(writer, response(200, "end"))

    headers = [("Authorization", "Bearer x"), ("Cookie", "a=b"), ("X-Other", "1")]
    async with serve(app) as server:
        attempt = await http.probe(server.url("/start"), headers, follow_non_local_redirects=True)
    assert attempt.result is Result.SUCCESS
    hop = server.requests[1]
    assert (hop.get("Authorization") == "Bearer x") is sent
    assert (hop.get("Cookie") == "a=b") is sent
    assert hop.get("X-Other") == "1"


async def test_spec_13_6_timeout_covers_the_whole_redirect_chain() -> None:
    """§13.6: one deadline covers every hop; the error names the hop in flight."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        n = int(request.path.rsplit("/", 1)[1])
        await asyncio.sleep(0.08)
        await send(writer, response(302, "", [("Location", f"/hop/{n + 1}")]))

    async with serve(app) as server:
        attempt = await http.probe(server.url("/hop/0"), timeout=SHORT)
    assert attempt.result is Result.FAILURE
    assert attempt.timed_out
    assert attempt.output == f'Get "{server.url("/hop/2")}": {TIMEOUT_TEXT}'
    assert attempt.latency < SHORT + 0.5


# ---------------------------------------------------------------------------------------------
# D3: TestHTTPProbeChecker_HostHeaderPreservedAfterRedirect


async def d3_app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
    if request.path == "/redirect":
        await send(writer, response(302, "", [("Location", "/success")]))
    elif request.path == "/absolute":
        location = f"http://127.0.0.1:{writer.get_extra_info('sockname')[1]}/success"
        await send(writer, response(302, "", [("Location", location)]))
    elif request.get("Host") == "www.success.com":
        await send(writer, response(200, "ok"))
    else:
        await send(writer, response(400, "wrong host"))


@pytest.mark.parametrize("follow", [False, True])
@pytest.mark.parametrize(
    ("host", "result"), [("www.success.com", Result.SUCCESS), ("www.fail.com", Result.FAILURE)]
)
async def test_vector_d3_host_header_preserved_after_redirect(
    follow: bool, host: str, result: Result
) -> None:
    """Vector D3 / TestHTTPProbeChecker_HostHeaderPreservedAfterRedirect."""
    async with serve(d3_app) as server:
        attempt = await http.probe(
            server.url("/redirect"), [("Host", host)], follow_non_local_redirects=follow
        )
        assert [r.get("Host") for r in server.requests] == [host, host]
    assert attempt.result is result


async def test_net_http_custom_host_is_dropped_on_absolute_redirect() -> None:
    """net/http Client.do (golang.org/issue/22233): the custom Host is kept only when the
    Location is relative; after an absolute Location, even to the same host, the request's Host
    is the URL's. Upstream's D3 test uses a relative Location, so it passes either way."""
    async with serve(d3_app) as server:
        attempt = await http.probe(server.url("/absolute"), [("Host", "www.success.com")])
        assert [r.get("Host") for r in server.requests] == [
            "www.success.com",
            f"127.0.0.1:{server.port}",
        ]
    assert attempt.result is Result.FAILURE


# ---------------------------------------------------------------------------------------------
# D4: body limit


@pytest.mark.parametrize(
    ("size", "expected"),
    [(MAX_OUTPUT_BYTES + 1, MAX_OUTPUT_BYTES), (MAX_OUTPUT_BYTES - 1, MAX_OUTPUT_BYTES - 1)],
    ids=["PayloadTruncated", "PayloadNormal"],
)
async def test_vector_d4_body_limit(size: int, expected: int) -> None:
    """Vector D4: 10241 bytes give the first 10240 and no error; 10239 give them all."""
    payload = bytes(ord("a") + i % 26 for i in range(size))

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(200, payload))

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"))
    assert attempt.result is Result.SUCCESS
    assert attempt.error is None
    assert attempt.output == payload[:expected].decode()
    assert attempt.body == attempt.output


async def test_spec_13_8_huge_body_is_capped_and_not_read_to_the_end() -> None:
    """§13.8 / utilio.ReadAtMost: an endless body gives 10 KiB of output; the probe stops
    reading there and hangs up, so the server cannot send it all."""
    chunk = b"x" * 65536
    total = 256 * 1024 * 1024
    sent = 0
    ended = asyncio.Event()

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: {total}\r\n\r\n".encode())
        try:
            while sent < total:
                writer.write(chunk)
                await writer.drain()
                sent += len(chunk)
        finally:
            ended.set()

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"), timeout=5.0)
        await asyncio.wait_for(ended.wait(), 5.0)
    assert attempt.result is Result.SUCCESS
    assert attempt.output == "x" * MAX_OUTPUT_BYTES
    assert sent < total


# ---------------------------------------------------------------------------------------------
# D5: proxy environment ignored


async def test_vector_d5_proxy_environment_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Vector D5 / TestHTTPProbeProxy: with http_proxy and HTTP_PROXY (and the rest) pointing
    at a local proxy, the probe still goes straight to the target and never to the proxy."""

    async def proxy_app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(200, "welcome to http probe proxy"))

    async def target_app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(200, "target"))

    async with serve(proxy_app) as proxy, serve(target_app) as target:
        for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(name, proxy.url(""))
        for name in ("no_proxy", "NO_PROXY"):
            monkeypatch.delenv(name, raising=False)
        attempt = await http.probe(target.url("/"))
        assert attempt.result is Result.SUCCESS
        assert attempt.output == "target"
        assert proxy.connections == 0
        assert target.requests[0].target == "/"


# ---------------------------------------------------------------------------------------------
# D6: URL formatting


@pytest.mark.parametrize(
    ("scheme", "host", "port", "path", "url"),
    [
        ("http", "localhost", 93, "", "http://localhost:93"),
        ("https", "localhost", 93, "/path", "https://localhost:93/path"),
        ("http", "localhost", 93, "?foo", "http://localhost:93?foo"),
        ("https", "localhost", 93, "/path?bar", "https://localhost:93/path?bar"),
    ],
)
def test_vector_d6_format_url(scheme: str, host: str, port: int, path: str, url: str) -> None:
    """Vector D6 / TestFormatURL."""
    assert http.format_url(scheme, host, port, path) == url


@pytest.mark.parametrize(
    ("host", "path", "url"),
    [
        ("::1", "/healthz", "http://[::1]:8080/healthz"),
        ("fe80::1%eth0", "/", "http://[fe80::1%25eth0]:8080/"),
        ("10.0.0.1", "healthz", "http://10.0.0.1:8080/healthz"),
        ("10.0.0.1", "/a b", "http://10.0.0.1:8080/a%20b"),
        ("10.0.0.1", "/a!b;c=d", "http://10.0.0.1:8080/a!b;c=d"),
        ("10.0.0.1", "/a%2Fb", "http://10.0.0.1:8080/a%2Fb"),
        ("10.0.0.1", "/x#frag", "http://10.0.0.1:8080/x#frag"),
        ("10.0.0.1", "/x?", "http://10.0.0.1:8080/x?"),
        ("10.0.0.1", "//other:1/x", "http://10.0.0.1:8080/x"),
        ("10.0.0.1", "/%zz", "http://10.0.0.1:8080/%25zz"),
        ("", "/x", "http://:8080/x"),
    ],
    ids=[
        "ipv6-bracketed",
        "ipv6-zone-escaped",
        "relative-path-gets-slash",
        "space-escaped",
        "sub-delims-kept",
        "encoded-slash-kept",
        "fragment-kept",
        "force-query",
        "authority-in-path-replaced",
        "unparsable-path-used-raw",
        "empty-pod-ip",
    ],
)
def test_spec_13_1_format_url_follows_go_url_parsing(host: str, path: str, url: str) -> None:
    """§13.1: JoinHostPort brackets IPv6; the path goes through Go's url.Parse and
    URL.String(), and a path Go cannot parse is used as a raw path."""
    assert http.format_url("http", host, 8080, path) == url


# ---------------------------------------------------------------------------------------------
# D7 / D8: headers


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            [
                ("Connection", "Keep-Alive"),
                ("Content-Type", "text/html"),
                ("Accept-Ranges", "bytes"),
            ],
            [
                ("Connection", "Keep-Alive"),
                ("Content-Type", "text/html"),
                ("Accept-Ranges", "bytes"),
            ],
        ),
        (
            [("HOST", "example.com"), ("FOO-bAR", "value")],
            [("Host", "example.com"), ("Foo-Bar", "value")],
        ),
        ([], []),
        ([("accept", "application/json")], [("Accept", "application/json")]),
        (
            [
                ("accept", "application/json"),
                ("Accept", "*/*"),
                ("pragma", "no-cache"),
                ("X-forwarded-for", "username"),
            ],
            [
                ("Accept", "application/json"),
                ("Accept", "*/*"),
                ("Pragma", "no-cache"),
                ("X-Forwarded-For", "username"),
            ],
        ),
    ],
)
def test_vector_d7_header_conversion(
    spec: list[tuple[str, str]], expected: list[tuple[str, str]]
) -> None:
    """Vector D7 / Test_v1HeaderToHTTPHeader, TestHeaderConversion: canonical names, repeated
    names keep every value in order (the defaults of D8 are added after them)."""
    has_accept = any(name == "Accept" for name, _ in expected)
    defaults = [("User-Agent", UA)] + ([] if has_accept else [("Accept", "*/*")])
    assert http.build_headers(spec) == expected + defaults


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("foo-bar", "Foo-Bar"),
        ("x-FORWARDED-for", "X-Forwarded-For"),
        ("www-authenticate", "Www-Authenticate"),
        ("foo bar", "foo bar"),
        ("føø", "føø"),
        ("", ""),
        ("a--b", "A--B"),
    ],
)
def test_vector_d7_canonical_header_key(name: str, canonical: str) -> None:
    """Vector D7: http.CanonicalHeaderKey; keys that are not tokens are left as written."""
    assert http.canonical_header_key(name) == canonical


@pytest.mark.parametrize(
    ("spec", "ua", "accept"),
    [
        ([], UA, "*/*"),
        ([("Accept", "application/json")], UA, "application/json"),
        ([("Accept", "")], UA, None),
        ([("User-Agent", "")], None, "*/*"),
    ],
    ids=["none", "accept-json", "accept-empty", "user-agent-empty"],
)
async def test_vector_d8_default_request_headers(
    spec: list[tuple[str, str]], ua: str | None, accept: str | None
) -> None:
    """Vector D8: the defaults as built and as they arrive at the server."""
    built = dict(http.build_headers(spec))
    assert built.get("User-Agent") == ua
    assert built.get("Accept") == accept

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(200, "ok"))

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"), spec)
    assert attempt.result is Result.SUCCESS
    (seen,) = server.requests
    assert seen.get_all("User-Agent") == ([ua] if ua else [])
    assert seen.get_all("Accept") == ([accept] if accept else [])


def test_spec_13_2_accepts_model_http_headers() -> None:
    """§13.2: the spec model's HTTPHeader entries convert like (name, value) pairs."""
    built = http.build_headers([HTTPHeader(name="x-probe", value="1"), ("accept", "text/plain")])
    assert built == [("X-Probe", "1"), ("Accept", "text/plain"), ("User-Agent", UA)]


def test_spec_13_3_user_agent_uses_major_minor_of_kube_version() -> None:
    """§13.3: `kube-probe/<major>.<minor>` from the kubelet version."""
    assert dict(http.build_headers([], kube_version="v1.36.2"))["User-Agent"] == "kube-probe/1.36"


async def test_spec_13_6_wire_headers_match_go_client() -> None:
    """§13.6 / net/http Request.write: Host, User-Agent, the rest sorted by name, then the
    transport's `Connection: close`; no Accept-Encoding (DisableCompression) and nothing else
    httpx would add. A spec `Connection: keep-alive` is sent and `close` is still added."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(200, "ok"))

    spec = [("x-b", "2"), ("X-a", " padded\t"), ("connection", "keep-alive"), ("x-b", "3")]
    async with serve(app) as server:
        attempt = await http.probe(server.url("/p?q=1"), spec)
    assert attempt.result is Result.SUCCESS
    (seen,) = server.requests
    assert (seen.method, seen.target, seen.version) == ("GET", "/p?q=1", "HTTP/1.1")
    assert list(seen.headers) == [
        ("Host", f"127.0.0.1:{server.port}"),
        ("User-Agent", UA),
        ("Accept", "*/*"),
        ("Connection", "keep-alive"),
        ("X-A", "padded"),
        ("X-B", "2"),
        ("X-B", "3"),
        ("Connection", "close"),
    ]


async def test_spec_13_6_no_accept_encoding_and_connection_close() -> None:
    """§13.6: DisableCompression sends no Accept-Encoding; DisableKeepAlives sends
    `Connection: close` (once, when the spec already says close)."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(200, "ok"))

    async with serve(app) as server:
        await http.probe(server.url("/"))
        await http.probe(server.url("/"), [("Connection", "close")])
    plain, explicit = server.requests
    assert plain.get_all("Accept-Encoding") == []
    assert plain.get_all("Connection") == ["close"]
    assert explicit.get_all("Connection") == ["close"]


async def test_spec_13_6_new_connection_per_attempt() -> None:
    """§13.6 (DisableKeepAlives): every attempt opens its own TCP connection."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        # a keep-alive response: the client, not the server, must decide not to reuse it
        await send(writer, response(200, "ok", [("Connection", "keep-alive")]))
        await asyncio.sleep(1)

    async with serve(app) as server:
        for _ in range(3):
            assert (await http.probe(server.url("/"))).result is Result.SUCCESS
        assert server.connections == 3
        assert len(server.requests) == 3


async def test_spec_13_5_host_header_sets_request_host() -> None:
    """§13.5: the first Host value is the request's Host; one Host line is sent."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(200, "ok"))

    async with serve(app) as server:
        await http.probe(server.url("/"), [("host", "a.example"), ("Host", "b.example")])
    assert server.requests[0].get_all("Host") == ["a.example"]


async def test_net_http_invalid_header_value_fails_before_sending(refused_port: int) -> None:
    """net/http Transport.roundTrip validates header fields before dialling."""
    url = f"http://127.0.0.1:{refused_port}/"
    attempt = await http.probe(url, [("X-Bad", "a\nb")])
    assert attempt.result is Result.FAILURE
    assert attempt.output == f'Get "{url}": net/http: invalid header field value for "X-Bad"'


# ---------------------------------------------------------------------------------------------
# D9: status codes


@pytest.mark.parametrize(
    ("code", "result"),
    [
        (199, Result.FAILURE),
        (200, Result.SUCCESS),
        (204, Result.SUCCESS),
        (299, Result.SUCCESS),
        (300, Result.WARNING),
        (304, Result.WARNING),
        (399, Result.WARNING),
        (400, Result.FAILURE),
        (404, Result.FAILURE),
        (503, Result.FAILURE),
    ],
)
def test_vector_d9_status_classification(code: int, result: Result) -> None:
    """Vector D9: DoHTTPProbe's classification of the final status code."""
    verdict, output = http.classify(code, "body")
    assert verdict is result
    if result is Result.SUCCESS:
        assert output == "body"
    elif result is Result.WARNING:
        assert output == "Probe terminated redirects, Response body: body"
    else:
        assert output == f"HTTP probe failed with statuscode: {code}"


@pytest.mark.parametrize(
    ("code", "result"),
    [
        (200, Result.SUCCESS),
        (204, Result.SUCCESS),
        (299, Result.SUCCESS),
        (300, Result.WARNING),
        (304, Result.WARNING),
        (399, Result.WARNING),
        (400, Result.FAILURE),
        (404, Result.FAILURE),
        (503, Result.FAILURE),
    ],
)
async def test_vector_d9_status_codes_on_the_wire(code: int, result: Result) -> None:
    """Vector D9 against a real server."""
    body = b"" if code in (204, 304) else b"b"

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(code, body, content_length=code not in (204, 304)))

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"))
    assert attempt.result is result
    assert attempt.status_code == code
    if result is Result.FAILURE:
        assert attempt.output == f"HTTP probe failed with statuscode: {code}"


async def test_net_http_informational_responses_are_skipped() -> None:
    """net/http persistConn.readResponse: 1xx responses (not 101) are skipped and the final
    response decides."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + response(200, "ok"))

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"))
    assert attempt.result is Result.SUCCESS
    assert attempt.output == "ok"


# ---------------------------------------------------------------------------------------------
# Transport errors and the error path


async def test_spec_13_8_connection_refused_is_go_dial_error(refused_port: int) -> None:
    """§13.8: a dial error is a Failure whose output is Go's client error text."""
    url = f"http://127.0.0.1:{refused_port}/"
    attempt = await http.probe(url)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == (
        f'Get "{url}": dial tcp 127.0.0.1:{refused_port}: connect: connection refused'
    )
    assert attempt.status_code is None
    assert attempt.body is None


BROKEN = "net/http: HTTP/1.x transport connection broken: "


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        # a TLS port's alert to a plain request: the line is the bytes before the alert's 0x0a
        (b"\x15\x03\x01\x00\x02\x02\x0a", r'malformed HTTP response "\x15\x03\x01\x00\x02\x02"'),
        (b"garbage\r\n\r\n", 'malformed HTTP response "garbage"'),
        (b"\r\nHTTP/1.1 200 OK\r\n\r\n", 'malformed HTTP response ""'),
        (b"HTTP/1.1\r\n\r\n", 'malformed HTTP response "HTTP/1.1"'),
        (b"\xff\xfe\r\n\r\n", r'malformed HTTP response "\xff\xfe"'),
        (b"SMTP ready\r\n\r\n", 'malformed HTTP status code "ready"'),
        (b"SMTP \xc3\xa9 ready\r\n\r\n", 'malformed HTTP status code "\u00e9"'),
        (b"HTTP/1.1 2000 OK\r\n\r\n", 'malformed HTTP status code "2000"'),
        (b"HTTP/1.1 -20 Odd\r\n\r\n", 'malformed HTTP status code "-20"'),
        (b"HTTP/1.1 OK 200\r\n\r\n", 'malformed HTTP status code "OK"'),
        (b"HTTP/11 200 OK\r\n\r\n", 'malformed HTTP version "HTTP/11"'),
        (b"http/1.1 200 OK\r\n\r\n", 'malformed HTTP version "http/1.1"'),
        (b"HTTP/1.x 200 OK\r\n\r\n", 'malformed HTTP version "HTTP/1.x"'),
    ],
    ids=[
        "tls-alert",
        "no-space",
        "blank-first-line",
        "version-only",
        "not-utf8",
        "smtp-banner",
        "short-code",
        "long-code",
        "negative-code",
        "code-not-a-number",
        "two-digit-version",
        "lower-case-protocol",
        "letter-in-version",
    ],
)
async def test_net_http_read_response_refuses_a_status_line_in_go_words(
    answer: bytes, error: str
) -> None:
    """§13.8 / response.go ReadResponse: the status line is cut at its first space; no
    space is `malformed HTTP response %q`, a code that is not 3 bytes of a non-negative number
    is `malformed HTTP status code %q`, then a protocol other than HTTP/d.d is `malformed HTTP
    version %q`; the transport marks each `net/http: HTTP/1.x transport connection broken`."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, answer)

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"))
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == f'Get "{server.url("/")}": {BROKEN}{error}'


async def test_net_http_judges_the_status_line_before_any_header_arrives() -> None:
    """ReadResponse reads the status line alone: a bad one (an SSH server's banner) fails as
    soon as its LF is in, though the server never finishes the head; h11 would wait for the
    blank line, into the timeout."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, b"SSH-2.0-OpenSSH_9.6\r\n")
        await asyncio.sleep(3)

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"), timeout=2.0)
    assert not attempt.timed_out
    assert attempt.output.endswith(f'{BROKEN}malformed HTTP response "SSH-2.0-OpenSSH_9.6"')
    assert attempt.latency < 1.0


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"garbage", 'malformed HTTP response "garbage"'),
        (b"HTTP/1.1 200 OK", "unexpected EOF"),
        (b"HTTP/1.1 200 OK\r\n", "unexpected EOF"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", "unexpected EOF"),
        (b"HTTP/1.1 200 OK\r\nContent-", 'malformed MIME header: missing colon: "Content-"'),
    ],
    ids=[
        "inside-a-bad-status-line",
        "inside-the-status-line",
        "after-the-status-line",
        "after-a-header",
        "inside-a-header-name",
    ],
)
async def test_net_http_read_response_connection_ends_inside_the_head(
    answer: bytes, error: str
) -> None:
    """A head the server cuts off with its close: Go judges the line the close cut off as it is
    (a status line, then header lines, textproto readMIMEHeader), and an end between lines is
    io.ErrUnexpectedEOF (`unexpected EOF`), not the bare `EOF` of a close before any byte."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, answer)

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"))
    assert attempt.result is Result.FAILURE
    assert attempt.output == f'Get "{server.url("/")}": {BROKEN}{error}'


@pytest.mark.parametrize(
    ("header_line", "error"),
    [
        (b"no colon here", 'malformed MIME header: missing colon: "no colon here"'),
        (b" folded: first", "malformed MIME header initial line:  folded: first"),
        (b"Bad\x01Name: v", "malformed MIME header line: Bad\x01Name: v"),
        (b"X-Val: a\x7fb", "malformed MIME header line: X-Val: a\x7fb"),
    ],
    ids=["missing-colon", "continuation-first", "control-byte-in-name", "del-in-value"],
)
async def test_textproto_read_mime_header_refuses_a_header_line_in_go_words(
    header_line: bytes, error: str
) -> None:
    """textproto readMIMEHeader: a first line without a colon, a continuation line first, or
    a name or value with bytes a header may not hold, each in Go's words."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, b"HTTP/1.1 200 OK\r\n" + header_line + b"\r\nContent-Length: 0\r\n\r\n")

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"))
    assert attempt.output == f'Get "{server.url("/")}": {BROKEN}{error}'


HEAD_CAP = 10 << 20  # net/http Transport: MaxResponseHeaderBytes unset (the kubelet's prober)


def _head_of(size: int) -> bytes:
    """A 200 response head of exactly `size` bytes, made up by one long header."""
    start, end = b"HTTP/1.1 200 OK\r\nX-Big: ", b"\r\nContent-Length: 2\r\n\r\n"
    return start + b"a" * (size - len(start) - len(end)) + end


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        (_head_of(200 * 1024) + b"ok", True),
        (_head_of(HEAD_CAP) + b"ok", True),
        (_head_of(HEAD_CAP + 1) + b"ok", False),
        (b"x" * (HEAD_CAP + 10), False),
    ],
    ids=["200-kib", "exactly-10-mib", "one-byte-over", "status-line-over"],
)
async def test_net_http_transport_reads_at_most_10_mib_of_response_head(
    answer: bytes, ok: bool
) -> None:
    """transport.go: with MaxResponseHeaderBytes unset a response head may take 10 << 20
    bytes (maxHeaderResponseSize); a head that has not ended by then fails with readLoop's
    `net/http: server response headers exceeded 10485760 bytes; aborted`. A 200 KiB head,
    which httpcore's h11 refuses at 100 KiB, reads."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, answer)

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"), timeout=10.0)
    if ok:
        assert (attempt.result, attempt.output, attempt.status_code) == (Result.SUCCESS, "ok", 200)
    else:
        assert attempt.output == (
            f'Get "{server.url("/")}": {BROKEN}net/http: server response headers exceeded '
            "10485760 bytes; aborted"
        )


async def test_spec_13_8_connection_reset_names_both_ends() -> None:
    """§13.8: a reset before the response is Go's `read tcp <local>-><remote>` error."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        writer.transport.abort()

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"))
    assert attempt.result is Result.FAILURE
    prefix = f'Get "{server.url("/")}": read tcp 127.0.0.1:'
    assert attempt.output.startswith(prefix)
    assert attempt.output.endswith(f"->127.0.0.1:{server.port}: read: connection reset by peer")


async def test_spec_13_8_body_cut_short_is_an_error_return() -> None:
    """§13.8: a body-read error after the headers is (Failure, "", err), which the prober
    retries; the Attempt keeps the status and what arrived."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"))
    assert attempt.result is Result.FAILURE
    assert attempt.output == ""
    assert attempt.error == "unexpected EOF"
    assert attempt.status_code == 200
    assert attempt.body == "partial"
    assert not attempt.timed_out


async def test_spec_13_6_deadline_while_reading_body_is_an_error_return() -> None:
    """§13.6 and §13.8: Client.Timeout also covers the body; running out there fails the
    body read, so it is the error path with Go's body-timeout text."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nslow")
        await asyncio.sleep(3)

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"), timeout=SHORT)
    assert attempt.result is Result.FAILURE
    assert attempt.output == ""
    assert attempt.error == BODY_TIMEOUT_TEXT
    assert attempt.timed_out
    assert attempt.body == "slow"


async def test_spec_13_8_body_stalling_after_10_kib_is_not_waited_for() -> None:
    """utilio.ReadAtMost stops at the limit, so a body that stalls after 10 KiB is a Success."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {MAX_OUTPUT_BYTES * 2}\r\n\r\n".encode()
        await send(writer, head + b"y" * MAX_OUTPUT_BYTES)
        await asyncio.sleep(3)

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"), timeout=SHORT)
    assert attempt.result is Result.SUCCESS
    assert attempt.output == "y" * MAX_OUTPUT_BYTES
    assert attempt.latency < SHORT


async def test_go_client_zero_timeout_means_no_deadline() -> None:
    """http.Client{Timeout: 0} has no deadline."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(0.05)
        await send(writer, response(200, "late"))

    async with serve(app) as server:
        attempt = await http.probe(server.url("/"), timeout=0)
    assert attempt.result is Result.SUCCESS


async def test_unresolvable_host_is_go_lookup_error(refused_port: int) -> None:
    """A name that does not resolve: Go's `dial tcp: lookup <host>: no such host`."""
    url = f"http://probe-target.invalid:{refused_port}/"
    attempt = await http.probe(url)
    assert attempt.result is Result.FAILURE
    assert attempt.output == f'Get "{url}": dial tcp: lookup probe-target.invalid: no such host'


# ---------------------------------------------------------------------------------------------
# TLS


@pytest.mark.parametrize("make_context", [ca_signed_context, self_signed_context])
async def test_spec_13_6_https_skips_verification(
    ca: trustme.CA, make_context: Callable[[trustme.CA], ssl.SSLContext]
) -> None:
    """§13.6: InsecureSkipVerify, so a certificate from an unknown CA, or a self-signed
    one, is accepted."""

    async def app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(200, "secure"))

    async with serve(app, ssl_context=make_context(ca)) as server:
        attempt = await http.probe(server.url("/"))
        assert attempt.result is Result.SUCCESS, attempt
        assert attempt.output == "secure"
        assert server.connections == 1


async def test_https_against_plain_http_port_is_go_error() -> None:
    """An HTTPS probe to a plain-HTTP port: Go's `server gave HTTP response to HTTPS client`."""

    async def plain(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(16)
        await send(writer, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    async with serve(raw_handler=plain) as server:
        url = f"https://127.0.0.1:{server.port}/"
        attempt = await http.probe(url)
    assert attempt.result is Result.FAILURE
    assert attempt.output == f'Get "{url}": http: server gave HTTP response to HTTPS client'


async def test_https_redirect_to_http_sends_no_referer(ca: trustme.CA) -> None:
    """net/http refererForURL: no Referer on an https -> http redirect."""

    async def target_app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(200, "plain"))

    async with serve(target_app) as plain:

        async def tls_app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
            await send(writer, response(302, "", [("Location", plain.url("/"))]))

        async with serve(tls_app, ssl_context=ca_signed_context(ca)) as secure:
            attempt = await http.probe(secure.url("/"))
        assert attempt.result is Result.SUCCESS
        assert plain.requests[0].get("Referer") is None


# ---------------------------------------------------------------------------------------------
# Cost


async def test_spec_13_6_each_attempt_hangs_up_its_connection() -> None:
    """§13.6 (DisableKeepAlives): even when the server offers keep-alive, the probe closes
    its connection when the attempt ends; nothing stays pooled."""
    closed_by_probe = 0
    all_closed = asyncio.Event()
    count = 20

    async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal closed_by_probe
        await reader.readuntil(b"\r\n\r\n")
        await send(writer, response(200, "ok", [("Connection", "keep-alive")]))
        if await reader.read() == b"":
            closed_by_probe += 1
            if closed_by_probe == count:
                all_closed.set()

    async with serve(raw_handler=keep_alive) as server:
        results = await asyncio.gather(*(http.probe(server.url("/")) for _ in range(count)))
        assert {a.result for a in results} == {Result.SUCCESS}
        await asyncio.wait_for(all_closed.wait(), 2.0)
    assert server.connections == count
