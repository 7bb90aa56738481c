"""Make Go's and the kubelet's exact texts, with the pure helpers behind them, in one place.

What the kubelet writes in a probe event, or returns as a probe's error, is the `Error()` of a
Go value: a `*url.Error`, a `*net.OpError`, an errno, a duration. probetui's handlers, the
runtimes' adjustments (`probetui.prober.handlers`) and simulate's synthetic attempts all build
their texts here, so a real attempt and a made-up one cannot drift apart. Each text names the
upstream file it is copied from; nothing here touches the network or the clock.

- `go_quote`: `strconv.Quote`, Go's `%q` (`strconv/quote.go`)
- `go_duration`: `time.Duration.String`, Go's `%v`/`%s` of a duration (`time/time.go`)
- `errno_text`, `syscall_error`: `syscall.Errno.Error` (`syscall/syscall_unix.go`, glibc's
  strings), `os.SyscallError.Error` (`os/error.go`)
- `join_host_port`: `net.JoinHostPort` (`net/ipsock.go`)
- `op_error`, `dns_error`, `IO_TIMEOUT`, `NO_SUCH_HOST`: `net.OpError.Error` (`net/net.go`),
  `net.DNSError.Error` (`net/net.go`), `poll.errTimeout` (`internal/poll/fd.go`),
  `errNoSuchHost` (`net/net.go`)
- `conn_addresses`, `stream_error`: a connection's ends (`net.TCPAddr.String`,
  `net/tcpsock.go`) and a failed read or write on it, as `net.OpError` prints them
- `url_error`, `GoError`: `url.Error.Error` with Op "Get" (`net/url/url.go`,
  `net/http/client.go`), and the exception that carries the text after `Get "<url>": `
- `unsupported_scheme`: `net/http/transport.go` (`Transport.roundTrip`)
- `tls_error`, `crypto_tls_error`: `crypto/tls` (`alert.go`, `conn.go`, `handshake_client.go`'s
  "failed to verify certificate"), `crypto/x509` (`UnknownAuthorityError`) and net/http's reply
  to a plain-HTTP server (`net/http/transport.go`), from Python's `ssl` errors
- `head_error`: `net/http/transport.go` (`persistConn.readLoop`) for a response head h11
  refuses after Go's own reading of it (`probetui.probe.response_head`) passed it
- `TIMEOUT_AWAITING_HEADERS`, `TIMEOUT_READING_BODY`: `net/http/client.go` (`Client.do`'s
  timeout wrapping, `cancelTimerBody.Read`)
- `TRANSPORT_BROKEN`, `MAX_RESPONSE_HEADER_BYTES`, `HEADERS_TOO_LARGE`: `net/http/transport.go`
  (`persistConn.readLoop`, `maxHeaderResponseSize`)
- `H2C_HTTP1_ANSWER`: `net/http/h2_bundle.go` (`Framer.ReadFrame`), what the kubelet's h2c
  transport says of a server that answers in HTTP/1.1
- `TOO_MANY_REDIRECTS`, `http_status_failed`, `http_redirect_warning`: `pkg/probe/http/http.go`
  (`RedirectChecker`, `DoHTTPProbe`)
- `grpc_*`, `GRPC_HEALTHY`: `pkg/probe/grpc/grpc.go` (`Probe`)
- `exec_timed_out`: `k8s.io/cri-client/pkg/remote_runtime.go` (`execSyncV1`, `ErrCommandTimedOut`)
- `exec_start_error`: `os/exec` (`exec.Error`, `LookPath`) as the runtime reports a command it
  cannot start
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from probetui.goquote import go_quote

if TYPE_CHECKING:
    import ssl

# ---------------------------------------------------------------------------------------------
# time.Duration.String


def go_duration(seconds: float) -> str:
    """Format seconds the way Go's `time.Duration.String` does: 10s, 1m20s, 5m0s, 1.5s, 500ms."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 1_000_000_000:
        for unit, size in (("ns", 1), ("µs", 1_000), ("ms", 1_000_000)):
            if u < size * 1000:
                return f"{sign}{_frac(u, size)}{unit}"
    hours, rem = divmod(u, 3_600_000_000_000)
    minutes, rem = divmod(rem, 60_000_000_000)
    text = f"{_frac(rem, 1_000_000_000)}s"
    if u >= 60_000_000_000:
        text = f"{minutes}m{text}"
    if u >= 3_600_000_000_000:
        text = f"{hours}h{text}"
    return sign + text


def _frac(value: int, size: int) -> str:
    """`value / size` with the fraction's trailing zeros dropped, as Go prints it."""
    whole, part = divmod(value, size)
    if part == 0:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}.{str(part).rjust(digits, '0').rstrip('0')}"


# ---------------------------------------------------------------------------------------------
# syscall, os and net errors


def errno_text(code: int | None) -> str:
    """`syscall.Errno.Error`: glibc's string with a lower-case first letter."""
    if code is None:
        return "unknown error"
    text = os.strerror(code)
    return text[:1].lower() + text[1:]


def syscall_error(call: str, code: int | None) -> str:
    """`os.SyscallError.Error`: `connect: connection refused`."""
    return f"{call}: {errno_text(code)}"


def join_host_port(host: str, port: int | str) -> str:
    """`net.JoinHostPort`: brackets around any host with a colon (IPv6)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# poll.errTimeout, what a deadline makes of a dial, read or write
IO_TIMEOUT = "i/o timeout"
# net's errNoSuchHost
NO_SUCH_HOST = "no such host"


def op_error(op: str, addr: str, detail: str) -> str:
    """`net.OpError.Error` for a TCP operation: `dial tcp 10.0.0.1:80: connect: ...`, without
    the address where the error has none (`dial tcp: lookup ...`). `addr` is `host:port`, or
    `local->remote` for a read or write."""
    return f"{op} tcp {addr}: {detail}" if addr else f"{op} tcp: {detail}"


def dns_error(host: str, reason: str) -> str:
    """`net.DNSError.Error`: `lookup <host>: <reason>`."""
    return f"lookup {host}: {reason}"


def conn_addresses(local: object, remote: object) -> str:
    """A connection's two ends as `net.OpError` prints them for a read or write,
    `local->remote`, from the socket's address tuples."""
    return f"{_tcp_addr(local)}->{_tcp_addr(remote)}"


def _tcp_addr(addr: object) -> str:
    # net.TCPAddr.String of a (host, port, ...) socket address
    if isinstance(addr, tuple) and len(addr) >= 2:
        return join_host_port(str(addr[0]), addr[1])
    return str(addr)


def stream_error(op: str, addresses: str, code: int | None) -> str:
    """A failed read or write on a connection (`op` "read" or "write"; `addresses` from
    `conn_addresses`): `read tcp a->b: read: connection reset by peer`. An error without an
    errno is a connection that just ended, which Go reads as `EOF`."""
    if code is None:
        return "EOF"
    return op_error(op, addresses, syscall_error(op, code))


# ---------------------------------------------------------------------------------------------
# net/http's client


def url_error(url: str, detail: str) -> str:
    """`url.Error.Error()` of a failed GET: `Get "<url>": <detail>`."""
    return f"Get {go_quote(url)}: {detail}"


TIMEOUT_AWAITING_HEADERS = (
    "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
)
TIMEOUT_READING_BODY = (
    "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
)
TRANSPORT_BROKEN = "net/http: HTTP/1.x transport connection broken: "
# persistConn.maxHeaderResponseSize: the kubelet's prober leaves the transport's
# MaxResponseHeaderBytes unset, so a response head may take 10 MiB; readLoop's text past it
MAX_RESPONSE_HEADER_BYTES = 10 << 20
HEADERS_TOO_LARGE = (
    f"net/http: server response headers exceeded {MAX_RESPONSE_HEADER_BYTES} bytes; aborted"
)


class GoError(Exception):
    """Carries an error whose text is exactly what Go would give; for a probe's request,
    what follows `Get "<url>": ` (`url_error`)."""


def unsupported_scheme(scheme: str) -> str:
    """`Transport.roundTrip`'s refusal of a URL that is neither http nor https."""
    return f"unsupported protocol scheme {go_quote(scheme.lower())}"


# OpenSSL's reasons for a first record that is no TLS record
_NOT_TLS = frozenset(
    {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "HTTP_REQUEST", "PACKET_LENGTH_TOO_LONG"}
)


def tls_error(err: ssl.SSLError) -> str:
    """Go's words for a TLS handshake or record that failed, from Python's `ssl` error, as
    net/http's transport reports them."""
    if (getattr(err, "reason", None) or "").upper() in _NOT_TLS:
        # Nearly always a plain-HTTP port answering a TLS hello; Go sees "HTTP/" and says so
        return "http: server gave HTTP response to HTTPS client"
    return crypto_tls_error(err)


def crypto_tls_error(err: ssl.SSLError) -> str:
    """crypto/tls's own words for a TLS handshake or record that failed (`conn.go`), which
    grpc-go's TLS credentials pass on unchanged."""
    # imported here: gotext is imported by nearly everything, TLS errors only by the handlers
    import ssl

    reason = (getattr(err, "reason", None) or "").upper()
    if reason in _NOT_TLS:
        return "tls: first record does not look like a TLS handshake"
    if isinstance(err, ssl.SSLEOFError | ssl.SSLZeroReturnError):
        return "EOF"
    if isinstance(err, ssl.SSLCertVerificationError):
        # only a verifying client meets these (the h2c transport's TLS after a redirect)
        return "tls: failed to verify certificate: " + _x509_error(err)
    if "_ALERT_" in reason:
        # a TLS alert from the server; Go words it "remote error: tls: <alert name>"
        alert = reason.split("_ALERT_", 1)[1].lower().replace("_", " ")
        return f"remote error: tls: {alert}"
    return f"tls: {(reason or str(err)).lower().replace('_', ' ')}"


# OpenSSL's verify codes for a chain that ends in no root the client trusts
_UNKNOWN_AUTHORITY = frozenset({2, 18, 19, 20, 21})


def _x509_error(err: ssl.SSLCertVerificationError) -> str:
    """crypto/x509's words for a chain it refuses: its UnknownAuthorityError exactly; for
    the rest (names, validity), Go's texts quote the certificate, which Python's error does
    not carry: OpenSSL's reason under Go's prefix."""
    if err.verify_code in _UNKNOWN_AUTHORITY:
        return "x509: certificate signed by unknown authority"
    return f"x509: {err.verify_message}"


_STATUS_LINE = re.compile(r"illegal status line: bytearray\(b(['\"])(.*)\1\)$", re.S)


def head_error(message: str) -> str:
    """The text (after `Get "<url>": `) for a response head that Go's reading passed
    (`probetui.probe.response_head`) but that h11 refused with `message`: Go reads such heads,
    so only the transport's prefix is Go's."""
    if message.startswith("Receive buffer too long"):
        # only a head after a 1xx one gets here, and Go's cap counts both
        return TRANSPORT_BROKEN + HEADERS_TOO_LARGE
    match = _STATUS_LINE.match(message)
    if match:
        # a line Go reads and h11 does not (two spaces, a signed code): Go's nearest words
        return f"{TRANSPORT_BROKEN}malformed HTTP response {go_quote(_bytes_repr(match))}"
    return TRANSPORT_BROKEN + message


def _bytes_repr(match: re.Match[str]) -> bytes:
    # h11 quotes the line as a bytes repr; turn it back into the bytes Go would quote
    try:
        raw = ast.literal_eval(f"b{match[1]}{match[2]}{match[1]}")
    except (ValueError, SyntaxError):
        raw = None
    return raw if isinstance(raw, bytes) else match[2].encode("utf-8", "surrogateescape")


# ---------------------------------------------------------------------------------------------
# the kubelet's HTTP prober

# RedirectChecker's error past 10 requests
TOO_MANY_REDIRECTS = "stopped after 10 redirects"


def http_status_failed(status_code: int) -> str:
    """DoHTTPProbe's Failure output for a status outside 200-399."""
    return f"HTTP probe failed with statuscode: {status_code}"


# h2cTransport (H2CContainerProbe) against a server that answered the client preface in
# HTTP/1.1: its "HTTP/1.1 " read as a frame header (net/http's h2_bundle.go, Framer.ReadFrame)
H2C_HTTP1_ANSWER = (
    "http2: failed reading the frame payload: http2: frame too large, note that the frame "
    "header looked like an HTTP/1.1 header"
)


def http_redirect_warning(body: str) -> str:
    """DoHTTPProbe's Warning output for a redirect it did not follow."""
    return f"Probe terminated redirects, Response body: {body}"


# ---------------------------------------------------------------------------------------------
# the kubelet's gRPC prober

GRPC_HEALTHY = "service healthy"


def grpc_connect_timeout(addr: str, timeout: float) -> str:
    """The dial did not reach READY within the probe's timeout."""
    return (
        f"timeout: failed to connect service {go_quote(addr)} within {go_duration(timeout)}: "
        "context deadline exceeded"
    )


def grpc_connect_error(addr: str, detail: str) -> str:
    return f"error: failed to connect service at {go_quote(addr)}: {detail}"


def grpc_rpc_timeout(timeout: float) -> str:
    """The Check call hit the probe's deadline."""
    return f"timeout: health rpc did not complete within {go_duration(timeout)}"


def grpc_unimplemented(message: str) -> str:
    return (
        f"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): "
        f"{message}"
    )


def grpc_rpc_error(detail: str) -> str:
    """Any other failed Check; `detail` is grpc-go's status error,
    `rpc error: code = <Code> desc = <message>`."""
    return f"error: health rpc probe failed: {detail}"


def grpc_unhealthy(status: str) -> str:
    """A Check that answered a status other than SERVING, by its enum name."""
    return f"service unhealthy (responded with {go_quote(status)})"


# ---------------------------------------------------------------------------------------------
# exec


def exec_timed_out(argv: Sequence[str], timeout: float) -> str:
    """The CRI client's error for an ExecSync that hit its deadline, which the exec prober makes
    the output: ErrCommandTimedOut, the joined argv quoted as Go's %q, the probe timeout as a Go
    duration, e.g. `command timed out: "sh -c sleep 10" timed out after 1s`."""
    return f"command timed out: {go_quote(' '.join(argv))} timed out after {go_duration(timeout)}"


def exec_start_error(program: str, exc: OSError) -> str:
    """os/exec's words for a command that cannot start, which the container runtime reports,
    e.g. `exec: "nope": executable file not found in $PATH`."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    reason = reason[:1].lower() + reason[1:]
    if isinstance(exc, FileNotFoundError):
        if "/" not in program:
            return f'exec: "{program}": executable file not found in $PATH'
        return f'exec: "{program}": stat {program}: {reason}'
    return f'exec: "{program}": {reason}'
