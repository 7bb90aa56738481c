"""`--via proxy`: an HTTP probe carried through the API server's `pods/proxy`.

The handler dials a one-shot loopback listener as if it were the pod; the listener reads the
one request, sends it to `/api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH` with the client's
credentials (redirects not followed: the prober decides about those), and writes the answer
back. Differences from the kubelet's path: the API server's proxy dials the pod IP from the
control plane, adds its own forwarding headers, and may rewrite `Location`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from urllib.parse import quote

import aiohttp

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 16 * 1024
# what is relayed of a body: more than the prober reads (10 KiB), so truncation is the prober's
MAX_RELAY_BODY = 64 * 1024
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "upgrade",
    "host",
    "te",
    "trailer",
    "proxy-connection",
}


class OneShotProxy:
    def __init__(self, core: Any, namespace: str, pod: str, port: int, timeout: float) -> None:
        self.api = core.api_client
        self.namespace = namespace
        self.pod = pod
        self.port = port
        self.timeout = timeout
        self.server: asyncio.Server | None = None

    async def start(self) -> tuple[str, int]:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        asyncio.get_running_loop().call_later(self.timeout + 10.0, self.server.close)
        return "127.0.0.1", self.server.sockets[0].getsockname()[1]

    def _url(self, target: str) -> str:
        path, _, query = target.partition("?")
        base = self.api.configuration.host.rstrip("/")
        url = (
            f"{base}/api/v1/namespaces/{quote(self.namespace, safe='')}/pods/"
            f"{quote(self.pod, safe='')}:{self.port}/proxy{path if path.startswith('/') else '/' + path}"
        )
        return f"{url}?{query}" if query else url

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self.server is not None
        self.server.close()  # one connection only
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.timeout + 5)
            if len(head) > MAX_HEAD_BYTES:
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    if name.strip().lower() not in _HOP_BY_HOP:
                        headers[name.strip()] = value.strip()
            queries: list[tuple[str, str]] = []
            await self.api.update_params_for_auth(headers, queries, ["BearerToken"])
            session: aiohttp.ClientSession = self.api.rest_client.pool_manager
            async with session.request(
                method,
                self._url(target),
                headers=headers,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=self.timeout + 5),
            ) as resp:
                body = await resp.content.read(MAX_RELAY_BODY)
                out = [f"HTTP/1.1 {resp.status} {resp.reason or ''}"]
                for name, value in resp.headers.items():
                    if name.lower() not in _HOP_BY_HOP:
                        out.append(f"{name}: {value}")
                out += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
                writer.write("\r\n".join(out).encode("latin-1", "replace") + body)
                await writer.drain()
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as e:
            log.info("proxy relay failed: %s", e)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
