"""The h2c handler (`httpProber.ProbeH2C`, `pkg/probe/http/http.go` 1.37, H2CContainerProbe)
against real servers on 127.0.0.1: an h2c server on the `h2` package, HTTP/1.1-only servers,
and servers that write scripted frames.

The expected texts are Go's: each was read from the output of upstream's `h2cTransport` (its
construction in `NewWithTLSConfig` with `ProbeH2C`, `DoHTTPProbe` and `RedirectChecker`, built
with Go 1.26) against the same kind of server.
"""

from __future__ import annotations

import asyncio
import socket

import pytest
import trustme

from probetui.kubelet.profile import profile_for
from probetui.probe import http_h2c
from probetui.probe.base import MAX_OUTPUT_BYTES, Result, user_agent
from probetui.probe.gotext import H2C_HTTP1_ANSWER
from probetui.prober.handlers import HandlerRunner
from probetui.prober.results import ResultsManager, ResultValue
from probetui.prober.status import PodStatus
from probetui.prober.worker import Worker
from probetui.spec.model import Container, HTTPGetAction, Pod, Probe, ProbeType
from tests.probe.h2c_servers import (
    H2cServer,
    data_frame,
    goaway_frame,
    headers_frame,
    rst_frame,
    serve_frames,
    serve_h2c,
    settings_frame,
)
from tests.probe.http_servers import SeenRequest, ca_signed_context, response, send, serve

pytestmark = pytest.mark.timeout(20)

SHORT = 0.3
AWAITING_HEADERS = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
READING_BODY = (
    "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
)
INTERNAL_ERROR, REFUSED_STREAM = 2, 7


def _ok(server: H2cServer, fields: dict[str, list[str]]) -> tuple[int, list, bytes]:
    return 200, [("content-type", "text/plain")], b"ok body"


async def test_success_over_prior_knowledge_ProbeH2C_DoHTTPProbe() -> None:
    """`ProbeH2C` + `DoHTTPProbe`: a 2xx over h2c is Success with the body as output. The
    request is HTTP/2 from its first byte (the server reads the preface), with the kubelet's
    User-Agent and Accept (`newProbeRequest`) and the pseudo fields `EncodeHeaders` writes."""
    async with serve_h2c(_ok) as server:
        attempt = await http_h2c.probe(server.url("/healthz?x=1"), kube_version="1.37")
    assert (attempt.result, attempt.output, attempt.error) == (Result.SUCCESS, "ok body", None)
    assert attempt.status_code == 200 and attempt.body == "ok body"
    assert attempt.target == server.url("/healthz?x=1") and attempt.handler == "http"
    fields = server.requests[0]
    assert fields[:4] == [
        (":authority", f"127.0.0.1:{server.port}"),
        (":method", "GET"),
        (":path", "/healthz?x=1"),
        (":scheme", "http"),
    ]
    assert sorted(fields[4:]) == [("accept", "*/*"), ("user-agent", user_agent("1.37"))]


async def test_statuses_DoHTTPProbe() -> None:
    """`DoHTTPProbe`'s verdict is the same over h2c: 5xx a Failure without the body, a 3xx
    that is not followed (another host) a Warning with it."""

    def answer(server: H2cServer, fields: dict[str, list[str]]) -> tuple[int, list, bytes]:
        if fields[":path"] == ["/fail"]:
            return 503, [], b"down"
        return 302, [("location", "http://elsewhere.invalid/")], b"moved"

    async with serve_h2c(answer) as server:
        failed = await http_h2c.probe(server.url("/fail"))
        moved = await http_h2c.probe(server.url("/moved"))
    assert (failed.result, failed.output) == (
        Result.FAILURE,
        "HTTP probe failed with statuscode: 503",
    )
    assert (moved.result, moved.output) == (
        Result.WARNING,
        "Probe terminated redirects, Response body: moved",
    )


async def test_body_read_at_most_10KiB_DoHTTPProbe() -> None:
    """`utilio.ReadAtMost`: the first 10 KiB of a longer body, and Success."""
    async with serve_h2c(lambda s, f: (200, [], b"x" * 100_000)) as server:
        attempt = await http_h2c.probe(server.url())
    assert attempt.result is Result.SUCCESS and len(attempt.output) == MAX_OUTPUT_BYTES


async def test_a_same_host_redirect_is_followed_over_h2c_RedirectChecker() -> None:
    """The h2c client keeps `RedirectChecker(false)`: a Location on the same host is followed,
    on a new h2c connection, with the Referer net/http adds."""

    def answer(server: H2cServer, fields: dict[str, list[str]]) -> tuple[int, list, bytes]:
        if fields[":path"] == ["/start"]:
            return 301, [("location", "/next")], b""
        return 200, [], b"arrived"

    async with serve_h2c(answer) as server:
        attempt = await http_h2c.probe(server.url("/start"))
    assert (attempt.result, attempt.output) == (Result.SUCCESS, "arrived")
    assert server.connections == 2
    assert server.request(1)["referer"] == [server.url("/start")]


async def test_a_redirect_to_https_verifies_the_certificate_h2cTransport(ca: trustme.CA) -> None:
    """`h2cTransport` has no TLSClientConfig, unlike `Probe`'s transport (InsecureSkipVerify):
    after a redirect to https the certificate is verified, and a CA the node does not trust
    fails the probe: `tls: failed to verify certificate: x509: certificate signed by unknown
    authority`. (No ALPN is offered, so a trusted server would get HTTP/1.1.)"""

    async def tls_app(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(200, "over tls"))

    async with serve(tls_app, ssl_context=ca_signed_context(ca)) as tls:
        target = tls.url("/next")
        async with serve_h2c(lambda s, f: (302, [("location", target)], b"")) as server:
            attempt = await http_h2c.probe(server.url("/start"))
    assert attempt.result is Result.FAILURE
    assert attempt.output == (
        f'Get "{target}": tls: failed to verify certificate: x509: certificate signed by '
        "unknown authority"
    )


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


# -- a server that speaks HTTP/1.1 only ---------------------------------------------------------


async def test_an_http1_server_answers_the_preface_Framer_ReadFrame() -> None:
    """An HTTP/1.1 server reads the client preface as a request (`PRI * HTTP/2.0`) and answers
    400. The h2c client reads "HTTP/1.1 " as a frame header, 4.7 MB long, past the 1 MiB it
    reads: the Failure's output is net/http's note that the frame looked like HTTP/1.1."""

    async def http1(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, response(400, "bad request", reason="Bad Request"))

    async with serve(http1) as server:
        attempt = await http_h2c.probe(server.url("/healthz"))
    assert server.requests[0].method == "PRI" and server.requests[0].version == "HTTP/2.0"
    assert attempt.result is Result.FAILURE and attempt.error is None
    assert attempt.output == f'Get "{server.url("/healthz")}": {H2C_HTTP1_ANSWER}'


async def test_an_http10_answer_is_a_frame_too_large_Framer_ReadFrame() -> None:
    """Only "HTTP/1.1 " gets the note (`invalidHTTP1LookingFrameHeader`); an HTTP/1.0 status
    line is `http2: frame too large` alone."""

    async def http10(request: SeenRequest, writer: asyncio.StreamWriter) -> None:
        await send(writer, b"HTTP/1.0 505 HTTP Version Not Supported\r\n\r\n")

    async with serve(http10) as server:
        attempt = await http_h2c.probe(server.url())
    assert attempt.output == f'Get "{server.url()}": http2: frame too large'


async def test_a_server_that_closes_unexpected_EOF_clientConnReadLoop_cleanup() -> None:
    """A connection that ends before any frame: cleanup turns io.EOF into io.ErrUnexpectedEOF;
    a partial frame header is io.ErrUnexpectedEOF too."""
    async with serve_frames(lambda n: ()) as closer, serve_frames(lambda n: (b"HTTP/1",)) as short:
        closed = await http_h2c.probe(closer.url())
        partial = await http_h2c.probe(short.url())
    assert closed.output == f'Get "{closer.url()}": unexpected EOF'
    assert partial.output == f'Get "{short.url()}": unexpected EOF'


# -- frames Go's client refuses or retries ------------------------------------------------------


async def test_rst_stream_is_a_stream_error_from_the_peer_processResetStream() -> None:
    async with serve_frames(lambda n: (settings_frame(), rst_frame(INTERNAL_ERROR))) as server:
        attempt = await http_h2c.probe(server.url())
    assert attempt.output == (
        f'Get "{server.url()}": stream error: stream ID 1; INTERNAL_ERROR; received from peer'
    )


async def test_a_refused_stream_goes_again_on_a_new_connection_canRetryError() -> None:
    """`http2canRetryError`: REFUSED_STREAM before the response; the request goes again at
    once on a new connection (`Transport.roundTrip`), and the second answer counts."""

    def script(n: int) -> list:
        if n == 1:
            return [settings_frame(), rst_frame(REFUSED_STREAM)]
        head = headers_frame([(":status", "200")], end_stream=False)
        return [settings_frame(), head, data_frame(b"second")]

    async with serve_frames(script) as server:
        attempt = await http_h2c.probe(server.url(), timeout=2.0)
    assert (attempt.result, attempt.output) == (Result.SUCCESS, "second")
    assert server.connections == 2


async def test_goaway_then_close_GoAwayError() -> None:
    """A GOAWAY that lets the stream through, then the end of the connection: cleanup reports
    the GOAWAY (`GoAwayError.Error`)."""
    script = (settings_frame(), goaway_frame(1, INTERNAL_ERROR, b"bye"))
    async with serve_frames(lambda n: script) as server:
        attempt = await http_h2c.probe(server.url())
    assert attempt.output == (
        f'Get "{server.url()}": http2: server sent GOAWAY and closed the connection; '
        'LastStreamID=1, ErrCode=INTERNAL_ERROR, debug="bye"'
    )


async def test_goaway_with_an_error_before_the_stream_setGoAway() -> None:
    """`setGoAway`: a GOAWAY with an error code that leaves out the connection's first stream
    fails it, not retried."""
    script = (settings_frame(), goaway_frame(0, INTERNAL_ERROR), 1.0)
    async with serve_frames(lambda n: script) as server:
        attempt = await http_h2c.probe(server.url())
    assert attempt.output == (
        f'Get "{server.url()}": http2: Transport received GOAWAY from server ErrCode:INTERNAL_ERROR'
    )
    assert server.connections == 1


async def test_a_graceful_goaway_still_delivers_the_stream_setGoAway() -> None:
    """A server shutting down gracefully sends GOAWAY(NO_ERROR) naming the stream, then the
    response: Go's client reads it (h2's H2Connection would refuse every frame after a
    GOAWAY, which is why the handler frames HTTP/2 itself)."""
    script = (
        settings_frame(),
        goaway_frame(1, 0),
        headers_frame([(":status", "200")], end_stream=False),
        data_frame(b"fine"),
    )
    async with serve_frames(lambda n: script) as server:
        attempt = await http_h2c.probe(server.url())
    assert (attempt.result, attempt.output) == (Result.SUCCESS, "fine")


@pytest.mark.parametrize(
    ("frames", "text"),
    [
        (
            [data_frame(b"x")],
            "connection error: PROTOCOL_ERROR",  # run: not a SETTINGS frame first
        ),
        (
            [settings_frame(), headers_frame([("content-type", "text/plain")])],
            "stream error: stream ID 1; PROTOCOL_ERROR; malformed response from server: "
            "missing status pseudo header",
        ),
        (
            [settings_frame(), headers_frame([(":status", "abc")])],
            "stream error: stream ID 1; PROTOCOL_ERROR; malformed response from server: "
            "malformed non-numeric status pseudo header",
        ),
        (
            [settings_frame(), headers_frame([(":status", "200"), ("X-Up", "a")])],
            'stream error: stream ID 1; PROTOCOL_ERROR; invalid header field name "X-Up"',
        ),
        (
            [settings_frame(), headers_frame([(":status", "101")])],
            "stream error: stream ID 1; PROTOCOL_ERROR; 1xx informational response with "
            "END_STREAM flag",
        ),
    ],
    ids=["data-first", "no-status", "bad-status", "upper-case-name", "1xx-end-stream"],
)
async def test_heads_the_client_refuses_handleResponse_readMetaFrame(
    frames: list, text: str
) -> None:
    async with serve_frames(lambda n: frames) as server:
        attempt = await http_h2c.probe(server.url())
    assert (attempt.result, attempt.output) == (Result.FAILURE, f'Get "{server.url()}": {text}')


async def test_interim_heads_and_a_short_body_handleResponse() -> None:
    """A 103 head is passed over; a body shorter than its Content-Length breaks off: the read
    fails (`(Failure, "", err)`, which the prober retries)."""
    early = (
        settings_frame(),
        headers_frame([(":status", "103")], end_stream=False),
        headers_frame([(":status", "204")]),
    )
    short = (
        settings_frame(),
        headers_frame([(":status", "200"), ("content-length", "10")], end_stream=False),
        data_frame(b"abc"),
    )
    async with serve_frames(lambda n: early) as a, serve_frames(lambda n: short) as b:
        hinted = await http_h2c.probe(a.url())
        broken = await http_h2c.probe(b.url())
    assert (hinted.result, hinted.status_code, hinted.output) == (Result.SUCCESS, 204, "")
    assert (broken.result, broken.output, broken.error) == (Result.FAILURE, "", "unexpected EOF")


async def test_deadlines_Client_Timeout() -> None:
    """One deadline over the attempt, as `http.Client.Timeout`: no head in time is Client.Do's
    timeout (a Failure with the text); a body that stalls is the body read's (an error)."""
    silent = (settings_frame(), 5.0)
    stalled = (settings_frame(), headers_frame([(":status", "200")], end_stream=False), 5.0)
    async with serve_frames(lambda n: silent) as a, serve_frames(lambda n: stalled) as b:
        no_head = await http_h2c.probe(a.url(), timeout=SHORT)
        no_body = await http_h2c.probe(b.url(), timeout=SHORT)
    assert no_head.timed_out and no_head.output == f'Get "{a.url()}": {AWAITING_HEADERS}'
    assert no_body.timed_out and (no_body.output, no_body.error) == ("", READING_BODY)


async def test_refused_connection_is_the_dial_error(refused_port: int) -> None:
    attempt = await http_h2c.probe(f"http://127.0.0.1:{refused_port}/")
    assert attempt.output == (
        f'Get "http://127.0.0.1:{refused_port}/": dial tcp 127.0.0.1:{refused_port}: '
        "connect: connection refused"
    )


@pytest.fixture
def refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- the request's fields -----------------------------------------------------------------------


def test_request_fields_EncodeHeaders() -> None:
    """`httpcommon.EncodeHeaders`: the probe's Host header is :authority (the hop passes it as
    the custom Host); Cookie is split at each ';'; values go as written (not trimmed, unlike
    HTTP/1.1's header lines); an empty User-Agent sends none, a missing one Go's default."""
    url = "http://127.0.0.1:8080/"
    headers = {
        "Host": ["app.example"],
        "Cookie": ["a=1; b=2"],
        "X-Pad": [" spaced "],
        "User-Agent": [""],
    }
    assert http_h2c.request_fields(url, "/", headers, "app.example") == [
        (":authority", "app.example"),
        (":method", "GET"),
        (":path", "/"),
        (":scheme", "http"),
        ("cookie", "a=1"),
        ("cookie", "b=2"),
        ("x-pad", " spaced "),
    ]
    assert http_h2c.request_fields(url, "/", {}, "")[-1] == ("user-agent", "Go-http-client/2.0")


@pytest.mark.parametrize(
    ("header", "text"),
    [
        (("Upgrade", "websocket"), 'http2: invalid Upgrade request header: ["websocket"]'),
        (("Connection", "foo"), 'http2: invalid Connection request header: ["foo"]'),
        (
            ("Transfer-Encoding", "gzip"),
            'http2: invalid Transfer-Encoding request header: ["gzip"]',
        ),
        (("Host", "a b"), "http2: invalid Host header"),
        (("Bad Name", "x"), 'net/http: invalid header field name "Bad Name"'),
        (("X-A", "a\x01b"), 'net/http: invalid header field value for "X-A"'),
    ],
)
async def test_headers_the_client_refuses_checkConnHeaders(
    header: tuple[str, str], text: str
) -> None:
    async with serve_h2c(_ok) as server:
        attempt = await http_h2c.probe(server.url(), [header])
    assert (attempt.result, attempt.output) == (Result.FAILURE, f'Get "{server.url()}": {text}')


# -- which transport the prober picks ----------------------------------------------------------


def _worker(port: int, version: str, gates: dict[str, bool] | None = None) -> Worker:
    probe = Probe(
        http_get=HTTPGetAction(port=port, path="/healthz", protocol="HTTP2"), timeout_seconds=1
    )
    c = Container("app", readiness_probe=probe)
    pod = Pod("p", uid="u", containers=(c,))
    return Worker(
        pod, c, ProbeType.READINESS, ResultsManager(), profile=profile_for(version, gates or {})
    )


async def test_protocol_HTTP2_goes_h2c_only_with_the_gate_prober_go_runProbe() -> None:
    """prober.go runProbe (1.37): `Protocol == HTTP2 && Enabled(H2CContainerProbe)` sends the
    probe through `ProbeH2C`; with the gate off (its default) or before 1.37, `Probe`, over
    HTTP/1.1, which the h2c-only server does not speak."""
    status = PodStatus(pod_ip="127.0.0.1")
    runner = HandlerRunner()
    async with serve_h2c(_ok) as server:
        on = await runner.run_probe(
            _worker(server.port, "1.37", {"H2CContainerProbe": True}), status
        )
        off = await runner.run_probe(_worker(server.port, "1.37"), status)
        before = await runner.run_probe(_worker(server.port, "1.36"), status)
    assert on.result is ResultValue.SUCCESS and on.attempt is not None
    assert on.attempt.output == "ok body"
    assert server.requests[0][4:] and dict(server.requests[0])[":path"] == "/healthz"
    for played in (off, before):
        assert played.result is ResultValue.FAILURE and played.attempt is not None
        assert "ok body" not in played.attempt.output
    assert len(server.requests) == 1  # only the h2c attempt was an HTTP/2 request
