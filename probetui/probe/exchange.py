"""Run the course of one HTTP probe attempt, the same in both HTTP handlers.

It follows docs/kubelet-behaviour.md §13.6-13.8: net/http's `Client.Do` with the kubelet's
CheckRedirect, hop by hop under `probetui.probe.redirect`'s policy; DoHTTPProbe's reading of
the answer (at most 10 KiB of body) and its verdict; what a deadline that ran out makes of the
attempt; and the TLS settings of the kubelet's transport.

A handler brings the transport, as `Hops`: one GET per hop, each on a new connection, handing
back the response head as a `Response` whose body is read here. `probetui.probe.http_lean` does
that on raw sockets and h11 (and the tests' oracle, `tests/probe/http_oracle.py`, on httpx).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterable
from dataclasses import dataclass
from functools import cache
from typing import Protocol

from probetui.probe.base import MAX_OUTPUT_BYTES, Attempt, Result, decode
from probetui.probe.gotext import (
    TIMEOUT_AWAITING_HEADERS,
    TIMEOUT_READING_BODY,
    TOO_MANY_REDIRECTS,
    GoError,
    http_redirect_warning,
    http_status_failed,
    url_error,
)
from probetui.probe.redirect import (
    MAX_REDIRECT_REQUESTS,
    REDIRECT_CODES,
    next_hop,
    redirect_headers,
)
from probetui.probe.request import HeaderMap, custom_host
from probetui.probe.url import hostname

# net/http Client.do reads this much of a redirect body before closing it
_REDIRECT_DRAIN_BYTES = 2 << 10

# (result, output, error) as DoHTTPProbe returns them
Outcome = tuple[Result, str, str | None]


@cache
def tls_context() -> ssl.SSLContext:
    """The transport's TLS (`NewWithTLSConfig`, §13.6): InsecureSkipVerify, and Go's floor."""
    # tls.Config{InsecureSkipVerify: true}; Go clients require TLS 1.2 or later by default
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


class Response(Protocol):
    """Describes one hop's response: its head read, its body not yet."""

    status_code: int

    def header_values(self, name: bytes) -> list[str]:
        """Every value of the header `name` (lower case), as httpx's `Headers.get_list`."""
        ...

    async def read_at_most(self, limit: int, sink: bytearray) -> str | None:
        """`read_at_most` over the body into `sink`: None, or the error ioutil.ReadAll returns
        where the body broke off, in Go's words."""
        ...

    async def close(self) -> None: ...


class Hops(Protocol):
    """Describes a handler's transport for one attempt."""

    async def send(self, url: str, headers: HeaderMap | None, host: str) -> Response:
        """One hop: a GET of `url` on a new connection, up to its response head. `headers` is
        the hop's header map, None on the first hop (the probe's own, which the handler may
        have made once and kept); `host` is a custom Host kept across a redirect, "" for the
        URL's. Raises `GoError` with what follows `Get "<url>": `."""
        ...

    def header_map(self) -> HeaderMap:
        """The first hop's header map, which every redirect's headers start from."""
        ...


async def read_at_most(chunks: AsyncIterable[bytes], limit: int, sink: bytearray) -> None:
    """utilio.ReadAtMost: stop as soon as `limit` bytes are in; never read on for the rest."""
    async for chunk in chunks:
        sink += chunk[: limit - len(sink)]
        if len(sink) >= limit:
            return


def classify(status_code: int, body: str) -> tuple[Result, str]:
    """DoHTTPProbe's verdict on a response that arrived with its body (§13.8, vector D9)."""
    if 200 <= status_code < 300:
        return Result.SUCCESS, body
    if 300 <= status_code < 400:
        return Result.WARNING, http_redirect_warning(body)
    # the body stays out of the message, as upstream keeps it until kubernetes#99425 is resolved
    return Result.FAILURE, http_status_failed(status_code)


@dataclass(slots=True)
class Progress:
    """Tracks where the attempt is, so a deadline can be reported the way Go reports it."""

    url: str
    reading_body: bool = False
    status_code: int | None = None
    body: bytearray | None = None
    # the body as text, once it is read whole
    text: str | None = None

    def timed_out(self) -> Outcome:
        """The deadline ran out here. Before the body, Client.Do fails: Failure with its error
        as the output. In the body, ReadAtMost fails: (Failure, "", err), which the prober
        retries (§13.8)."""
        if self.reading_body:
            return Result.FAILURE, "", TIMEOUT_READING_BODY
        return Result.FAILURE, url_error(self.url, TIMEOUT_AWAITING_HEADERS), None

    def attempt(
        self, target: str, outcome: Outcome, latency: float, started_at: float, timed_out: bool
    ) -> Attempt:
        result, output, error = outcome
        body = self.text
        if body is None and self.body is not None:
            body = decode(self.body)
        # by position: keywords cost a dict per attempt (benchmarks.engine --callgrind guards it)
        return Attempt(
            "http",
            target,
            result,
            output,
            error,
            latency,
            started_at,
            self.status_code,
            body,
            timed_out,
        )


async def exchange(
    hops: Hops, url: str, follow_non_local_redirects: bool, progress: Progress
) -> Outcome:
    """Client.Do with the kubelet's CheckRedirect, then DoHTTPProbe's reading of the answer.

    Returns (result, output, error) the way DoHTTPProbe does.
    """
    headers: HeaderMap | None = None
    # the first URL's host, which the redirect policy compares with: worked out only when a
    # redirect comes, as nearly every attempt has none
    original_hostname: str | None = None
    current, host, hop_headers = url, "", headers
    requests = 0
    while True:
        progress.url, progress.status_code = current, None
        try:
            response = await hops.send(current, hop_headers, host)
        except GoError as exc:
            return Result.FAILURE, url_error(current, str(exc)), None
        requests += 1
        progress.status_code = response.status_code
        if response.status_code not in REDIRECT_CODES:
            break
        if headers is None:
            # a redirect (rare): now the first hop's header map is needed, to follow it
            headers = hops.header_map()
            host = custom_host(headers)
        locations = response.header_values(b"location")
        if not locations or not locations[0]:
            break
        location = locations[0]
        if original_hostname is None:
            original_hostname = hostname(url)
        try:
            hop = next_hop(current, location, host, original_hostname, follow_non_local_redirects)
        except GoError as exc:
            return Result.FAILURE, url_error(current, str(exc)), None
        if hop is None:
            break  # ErrUseLastResponse: this 3xx is the answer
        target, next_host = hop
        progress.url = target
        await _drain(response)
        if requests >= MAX_REDIRECT_REQUESTS:
            return Result.FAILURE, url_error(location, TOO_MANY_REDIRECTS), None
        hop_headers = redirect_headers(headers, current, target)
        current, host = target, next_host

    progress.reading_body = True
    progress.body = body = bytearray()
    try:
        error = await response.read_at_most(MAX_OUTPUT_BYTES, body)
    finally:
        await response.close()
    if error is not None:
        return Result.FAILURE, "", error
    progress.text = text = decode(body)
    result, output = classify(response.status_code, text)
    return result, output, None


async def _drain(response: Response) -> None:
    """Client.do: read a little of a redirect's body, ignoring errors, then close it."""
    # h11, under both handlers, has made one value of any repeated Content-Length
    lengths = response.header_values(b"content-length")
    length = lengths[0] if lengths else None
    try:
        if length is None or not length.isdigit() or int(length) <= _REDIRECT_DRAIN_BYTES:
            await response.read_at_most(_REDIRECT_DRAIN_BYTES, bytearray())
    finally:
        await response.close()
