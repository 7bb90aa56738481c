"""What grpc-go's client makes of a gRPC health answer, kubelet release by kubelet release:
the grpc-go each release vendors (`GrpcGo`), its status codes, its reading of a response's
header blocks (`http2_client.go` operateHeaders) and of the response message (`rpc_util.go`
recvMsg, `stream.go` RecvMsg), and grpc.go's Failure output. No I/O: `probetui.probe.grpc_lean`
reads the frames and asks this module what they mean.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from http import HTTPStatus

from probetui.probe.gotext import (
    go_quote,
    grpc_connect_error,
    grpc_rpc_error,
    grpc_rpc_timeout,
    grpc_unimplemented,
)

# grpc-go's default largest message a client receives (defaultClientMaxReceiveMessageSize)
_MAX_MESSAGE = 4 << 20
# grpc-go 1.82's nonGRPCDataMaxLen: the body of a non-gRPC answer kept for its status message
NON_GRPC_BODY = 1024

# codes.Code.String() of grpc-go, by number
_CODE_NAMES = (
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
)
UNKNOWN, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNIMPLEMENTED = 2, 4, 8, 12
INTERNAL, UNAVAILABLE = 13, 14

# grpc-go's http2ErrConvTab: an RST_STREAM's HTTP/2 error code as a gRPC code, and its name
RST_CODES = {
    0x0: ("NO_ERROR", INTERNAL),
    0x1: ("PROTOCOL_ERROR", INTERNAL),
    0x2: ("INTERNAL_ERROR", INTERNAL),
    0x3: ("FLOW_CONTROL_ERROR", RESOURCE_EXHAUSTED),
    0x4: ("SETTINGS_TIMEOUT", INTERNAL),
    0x5: ("STREAM_CLOSED", INTERNAL),
    0x6: ("FRAME_SIZE_ERROR", INTERNAL),
    0x7: ("REFUSED_STREAM", UNAVAILABLE),
    0x8: ("CANCEL", 1),
    0x9: ("COMPRESSION_ERROR", INTERNAL),
    0xA: ("CONNECT_ERROR", INTERNAL),
    0xB: ("ENHANCE_YOUR_CALM", RESOURCE_EXHAUSTED),
    0xC: ("INADEQUATE_SECURITY", 7),
    0xD: ("HTTP_1_1_REQUIRED", INTERNAL),
}

# grpc-go's HTTPStatusConvTab: a response whose HTTP status is not 200, as a gRPC code
_HTTP_CODES = {400: INTERNAL, 401: 16, 403: 7, 404: UNIMPLEMENTED, 429: UNAVAILABLE}
_HTTP_CODES.update(dict.fromkeys((502, 503, 504), UNAVAILABLE))
# net/http's StatusText where it words a status otherwise than Python's HTTPStatus
_GO_STATUS_TEXT = {414: "Request URI Too Long", 418: "I'm a teapot"}

# strconv's syntax for a base-10 integer
_GO_INT = re.compile(rb"[+-]?[0-9]+")

# grpc.health.v1.HealthCheckResponse.ServingStatus names
SERVING = 1
STATUS_NAMES = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


# -- the release -----------------------------------------------------------------------------------

# the grpc-go release each kubelet release vendors (k8s.io/kubernetes go.mod, the newest patch
# served of each minor): grpc-go appends "grpc-go/VERSION" to the kubelet's user agent
GRPC_GO_BY_MINOR = {
    33: "1.68.1",
    34: "1.72.1",
    35: "1.72.2",
    36: "1.79.3",
    37: "1.82.1",
    38: "1.85.0",
}


@dataclass(frozen=True, slots=True)
class GrpcGo:
    """Tells what one kubelet release's gRPC probe does that another's does not: how its
    `pkg/probe/grpc/grpc.go` makes the client, and the grpc-go release it vendors."""

    # google.golang.org/grpc's version, as the user agent names it
    version: str
    # grpc.go from 1.38: `grpc.NewClient` and a fail-fast Check, no blocking dial; an Unavailable
    # Check is "failed to connect service"
    new_client: bool
    # grpc-go 1.79 operateHeaders: the content type alone says whether an answer is gRPC, a 1xx
    # head is passed over; stream.go's "cardinality violation" texts
    content_type_decides: bool
    # grpc-go 1.82: the first KiB of a non-gRPC answer's body goes into its status message
    non_grpc_body: bool
    # grpc-go 1.82 readyreader: a plaintext connection is read by syscall.Read on its raw
    # descriptor, so a read's error is the bare errno, with no net.OpError around it
    raw_reads: bool


def _minor(kube_version: str) -> int:
    """The modelled minor release nearest to `kube_version` (1.35 for one that is not a
    version)."""
    _, _, minor = kube_version.removeprefix("v").partition(".")
    digits = minor.split(".")[0]
    number = int(digits) if digits.isdigit() else 35
    return min(GRPC_GO_BY_MINOR, key=lambda m: abs(m - number))


@lru_cache(maxsize=64)
def client_for(kube_version: str) -> GrpcGo:
    """The gRPC client of the kubelet whose version is `kube_version`."""
    minor = _minor(kube_version)
    version = GRPC_GO_BY_MINOR[minor]
    release = tuple(int(part) for part in version.split("."))
    return GrpcGo(
        version=version,
        new_client=minor >= 38,
        content_type_decides=release >= (1, 79),
        non_grpc_body=release >= (1, 82),
        raw_reads=release >= (1, 82),
    )


def grpc_go_agent(kube_version: str) -> str:
    """What grpc-go adds to the user agent of the kubelet whose version is `kube_version`."""
    return f"grpc-go/{client_for(kube_version).version}"


class RpcError(Exception):
    """Signals that the Check call failed with a gRPC status (`code` None: with an error that is
    no status, printed as it is)."""

    def __init__(self, code: int | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _code_name(code: int) -> str:
    return _CODE_NAMES[code] if 0 <= code < len(_CODE_NAMES) else f"Code({code})"


def failure_text(error: RpcError, addr: str, timeout: float, client: GrpcGo) -> str:
    """grpc.go's Failure output for a Check that failed with `error`."""
    if error.code is None:
        return grpc_rpc_error(error.message)
    if error.code == UNAVAILABLE and client.new_client:
        return grpc_connect_error(addr, error.message)
    if error.code == UNIMPLEMENTED:
        return grpc_unimplemented(error.message)
    if error.code == DEADLINE_EXCEEDED:
        return grpc_rpc_timeout(timeout)
    # grpc-go's status error: `rpc error: code = <Code> desc = <message>`
    return grpc_rpc_error(f"rpc error: code = {_code_name(error.code)} desc = {error.message}")


def _go_int(func: str, value: bytes, bits: int) -> int | str:
    """strconv.ParseInt(value, 10, bits) (`func` names the caller, "strconv.ParseInt" or
    "strconv.Atoi"): the number, or the error's text."""
    if not _GO_INT.fullmatch(value):
        return f"{func}: parsing {go_quote(value)}: invalid syntax"
    number = int(value)
    if not -(1 << (bits - 1)) <= number < 1 << (bits - 1):
        return f"{func}: parsing {go_quote(value)}: value out of range"
    return number


def _decode_grpc_message(raw: bytes) -> str:
    """grpc-go's decodeGrpcMessage: %XX escapes decoded, anything else kept as it is."""
    if b"%" not in raw:
        return raw.decode("utf-8", errors="replace")
    out = bytearray()
    i, n = 0, len(raw)
    while i < n:
        if raw[i] == 0x25 and i + 3 <= n and _is_hex(raw[i + 1 : i + 3]):
            out.append(int(raw[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", errors="replace")


def _is_hex(pair: bytes) -> bool:
    return len(pair) == 2 and all(c in b"0123456789abcdefABCDEF" for c in pair)


@dataclass(slots=True)
class _Head:
    """Holds one header block as http2_client.operateHeaders reads it."""

    # the status of an answer that is no gRPC answer (its HTTP status, its content type)
    refused: RpcError | None = None
    # a 1xx head, passed over
    informational: bool = False
    # the trailers' grpc-status and grpc-message
    code: int = UNKNOWN
    message: str = ""


def _grpc_content_type(value: bytes) -> bool:
    """grpcutil.ContentSubtype's test: application/grpc, or with a `+` or `;` suffix."""
    return value == b"application/grpc" or value.startswith(
        (b"application/grpc+", b"application/grpc;")
    )


def operate_headers(
    fields: list[tuple[bytes, bytes]], initial: bool, ended: bool, client: GrpcGo
) -> _Head:
    """http2_client.operateHeaders: what one header block says. `RpcError` for a block that
    closes the stream at once (a malformed status)."""
    head = _Head()
    is_grpc = not initial
    content_type_error = "malformed header: missing HTTP content-type"
    # grpc-go 1.79 reads :status only for an answer that is no gRPC answer; before, as it comes
    raw_status: bytes | None = None
    http_status: int | None = None
    http_error = ""
    if initial and not client.content_type_decides:
        http_error = "malformed header: missing HTTP status"
    for name, value in fields:
        if name == b"content-type":
            if _grpc_content_type(value):
                content_type_error = ""
                is_grpc = True
            else:
                content_type_error = (
                    f"transport: received unexpected content-type {go_quote(value)}"
                )
        elif name == b"grpc-status":
            code = 0 if value == b"0" else _go_int("strconv.ParseInt", value, 32)
            if isinstance(code, str):
                raise RpcError(
                    UNKNOWN if client.content_type_decides else INTERNAL,
                    f"transport: malformed grpc-status: {code}",
                )
            head.code = code & 0xFFFFFFFF
        elif name == b"grpc-message":
            head.message = _decode_grpc_message(value)
        elif name == b":status":
            if client.content_type_decides:
                raw_status = value
            elif value == b"200":
                http_error, http_status = "", 200
            else:
                http_status = _parsed_status("strconv.ParseInt", value, 32)
                http_error = _unexpected_status(http_status)
    if client.content_type_decides:
        if is_grpc:
            return head
        if raw_status is None:
            http_error = "malformed header: missing HTTP status"
        else:
            http_status = _parsed_status("strconv.Atoi", raw_status, 64)
            if 100 <= http_status < 200:
                if ended:
                    raise RpcError(
                        INTERNAL,
                        f"protocol error: informational header with status code {http_status} "
                        "must not have END_STREAM set",
                    )
                head.informational = True
                return head
            http_error = _unexpected_status(http_status)
    elif is_grpc and not http_error:
        return head
    code = INTERNAL if http_status is None else _HTTP_CODES.get(http_status, UNKNOWN)
    head.refused = RpcError(code, "; ".join(e for e in (http_error, content_type_error) if e))
    return head


def _parsed_status(func: str, value: bytes, bits: int) -> int:
    status = _go_int(func, value, bits)
    if isinstance(status, str):
        raise RpcError(INTERNAL, f"transport: malformed http-status: {status}")
    return status


def _unexpected_status(status: int) -> str:
    return f"unexpected HTTP status code received from server: {status} ({_status_text(status)})"


def _status_text(status: int) -> str:
    """net/http's StatusText: "" for a status it has no words for."""
    if status in _GO_STATUS_TEXT:
        return _GO_STATUS_TEXT[status]
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def with_body(refused: RpcError, body: bytes) -> RpcError:
    """grpc-go 1.82's finalizeNonGRPCStatus: the status with the body read, `%q`-quoted."""
    return RpcError(refused.code, f"{refused.message}\ndata: {go_quote(body)}")


def _serving_status(message: bytes) -> int:
    """HealthCheckResponse.status from one length-prefixed gRPC message (protobuf wire format;
    fields other than 1 skipped)."""
    if message[0] != 0:
        raise RpcError(INTERNAL, "grpc: compressed flag set with identity or empty encoding")
    data = message[5:]
    status = 0
    i, n = 0, len(data)
    try:
        while i < n:
            key, i = _read_varint(data, i)
            field, wire = key >> 3, key & 7
            if wire == 0:
                value, i = _read_varint(data, i)
                if field == 1:
                    status = value
            elif wire == 1:
                i += 8
            elif wire == 2:
                size, i = _read_varint(data, i)
                i += size
            elif wire == 5:
                i += 4
            else:
                raise IndexError
            if i > n or field == 0:
                raise IndexError
    except IndexError:
        raise RpcError(
            INTERNAL,
            "grpc: failed to unmarshal the received message: "
            "proto: cannot parse invalid wire-format data",
        ) from None
    # an enum is an int32: a negative one comes as ten bytes of varint
    status &= 0xFFFFFFFF
    return status - (1 << 32) if status >= 1 << 31 else status


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7
        if shift >= 70:
            raise IndexError


def _message_size(messages: bytearray, start: int) -> int | None:
    """The length prefix of the message at `start` (None until its five bytes are in);
    recvMsg refuses one over the limit as soon as it reads it."""
    if len(messages) < start + 5:
        return None
    size = int.from_bytes(messages[start + 1 : start + 5], "big")
    if size > _MAX_MESSAGE:
        raise RpcError(
            RESOURCE_EXHAUSTED,
            f"grpc: received message larger than max ({size} vs. {_MAX_MESSAGE})",
        )
    return size


def messages_read(messages: bytearray, status: int | None, client: GrpcGo) -> int | None:
    """The serving status once the response message is whole (decoded then, as recvMsg does);
    an error for a second message, which a unary call refuses once it is read."""
    size = _message_size(messages, 0)
    if size is None or len(messages) < 5 + size:
        return status
    if status is None:
        status = _serving_status(bytes(messages[: 5 + size]))
    if len(messages) == 5 + size:
        return status
    second = _message_size(messages, 5 + size)
    if second is not None and len(messages) >= 10 + size + second:
        if client.content_type_decides:
            raise RpcError(
                INTERNAL,
                "cardinality violation: expected <EOF> for non server-streaming RPCs, "
                "but received another message",
            )
        raise RpcError(UNKNOWN, "grpc: client streaming protocol violation: get <nil>, want <EOF>")
    return status
