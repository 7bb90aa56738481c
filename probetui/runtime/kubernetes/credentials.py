"""Keep bearer tokens valid: exec credential plugins run again, token files read again.

client-go never holds a token for good. Its exec authenticator
(`plugin/pkg/client/auth/exec/exec.go`) runs the plugin again once the answer's
`status.expirationTimestamp` has passed, and when a request made with the current credentials
is answered 401 (an EKS token lasts about 15 minutes). Its token-file source
(`transport/token_source.go`, `NewCachedFileTokenSource`) reads `tokenFile` (and the pod's
service-account token) again a minute after the last read, less 10 s of leeway, and at once
after a 401 to a request that started after that read. One authenticator serves every client of
a kubeconfig user (client-go caches them by exec config), so a plugin runs once for them all.

Here each source is consulted through kubernetes-asyncio's `refresh_api_key_hook`, which the
library calls before every request it authenticates (list, watch, the exec and port-forward
upgrades, and the pods/proxy relay, which asks `update_params_for_auth`); 401s come from the
transport (`transport.ClusterSession`).

Where this differs: client-go runs the plugin while handling the 401; here the 401 marks the
credentials stale and the next request runs it, which gives the next request the same new
token. A plugin that fails on a refresh leaves the old token in use (its requests then get
401s that the reflector backs off from) and is not run again for `RETRY_AFTER_FAILURE`, so a
broken plugin is not started once per probe attempt. Client certificates from a plugin are
used as first given and not rotated.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "TOKEN_FILE_LEEWAY",
    "TOKEN_FILE_PERIOD",
    "Credential",
    "ExecTokenSource",
    "FileTokenSource",
    "TokenSource",
    "refresh_hook",
]

log = logging.getLogger(__name__)

# client-go's file token source: re-read after a minute, 10 s early
TOKEN_FILE_PERIOD = 60.0
TOKEN_FILE_LEEWAY = 10.0
# after a failed plugin run, the old credentials are kept this long before the next try
RETRY_AFTER_FAILURE = 5.0

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Credential:
    """Holds one answer of an exec plugin: a token, or a client certificate and key (PEM)."""

    token: str | None = None
    cert_pem: str | None = None
    key_pem: str | None = None
    # status.expirationTimestamp as a time.time() value; None: valid until a 401 says not
    expires: float | None = None


class TokenSource(Protocol):
    async def token(self) -> str | None:
        """Return the token to send now, refreshed first when it is due."""
        ...

    def unauthorized(self, sent: str | None, started: float) -> None:
        """A request that started at `started` with `Authorization: sent` was answered 401."""
        ...


class ExecTokenSource:
    """Gives the exec plugin's answer, run again when it has expired or was refused."""

    def __init__(
        self,
        run: Callable[[], Awaitable[Credential]],
        first: Credential,
        *,
        clock: Clock = time.time,
    ) -> None:
        self._run = run
        self.current = first
        self.clock = clock
        self.runs = 1
        self._stale = False
        self._failed_at: float | None = None
        self._task: asyncio.Future[None] | None = None

    def due(self) -> bool:
        if self._stale:
            return True
        expires = self.current.expires
        # Go: now.After(exp), no leeway
        return expires is not None and self.clock() > expires

    async def token(self) -> str | None:
        if self.due():
            if self._task is None:
                self._task = asyncio.ensure_future(self._refresh())
            # shielded: a request cancelled mid-wait must not kill the plugin others wait on
            await asyncio.shield(self._task)
        return self.current.token

    async def _refresh(self) -> None:
        try:
            now = self.clock()
            if self._failed_at is not None and now - self._failed_at < RETRY_AFTER_FAILURE:
                return
            try:
                answer = await self._run()
            except Exception as e:
                self._failed_at = self.clock()
                log.warning("refreshing credentials failed, the old ones stay in use: %s", e)
                return
            self._failed_at = None
            self.current = answer
            self._stale = False
            self.runs += 1
        finally:
            self._task = None

    def unauthorized(self, sent: str | None, started: float) -> None:
        # client-go's maybeRefreshCreds: only when the refused credentials are still the
        # current ones (a 401 to a request made before a rotation asks for nothing)
        if self.current.token is not None and sent == f"Bearer {self.current.token}":
            self._stale = True


class FileTokenSource:
    """Reads a token file, again every minute (10 s early) and after a 401."""

    def __init__(
        self, path: str | Path, *, fallback: str | None = None, clock: Clock = time.time
    ) -> None:
        self.path = Path(path)
        self.clock = clock
        self.reads = 0
        # read at the first request: the file wins over a `token` beside it, as in client-go
        self._token: str | None = None
        self._last = ""
        self._read_at = 0.0
        # the kubeconfig's own `token`, when it sets one beside `tokenFile`
        self._fallback = fallback

    async def token(self) -> str | None:
        now = self.clock()
        if self._token is not None and now < self._read_at + TOKEN_FILE_PERIOD - TOKEN_FILE_LEEWAY:
            return self._token
        try:
            text = await asyncio.to_thread(self.path.read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            text, problem = "", str(e)
        else:
            problem = f"{self.path} is empty"
        token = text.strip()
        if not token:
            # as client-go's caching source: a failed re-read keeps what was read before
            log.warning("cannot re-read the token file: %s", problem)
            return self._last or self._fallback
        self.reads += 1
        self._token = self._last = token
        self._read_at = self.clock()
        return token

    def unauthorized(self, sent: str | None, started: float) -> None:
        # ResetTokenOlderThan(start): a token read after the request started is left alone
        if self._read_at < started:
            self._token = None


def refresh_hook(source: TokenSource) -> Callable[[Any], Awaitable[None]]:
    """Return a `refresh_api_key_hook` for kubernetes-asyncio's Configuration."""

    async def hook(configuration: Any) -> None:
        token = await source.token()
        if token:
            configuration.api_key["BearerToken"] = f"Bearer {token}"

    return hook
