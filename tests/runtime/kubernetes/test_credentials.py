"""Credentials stay valid as client-go keeps them: exec plugins run again, token files re-read.

Pinned upstream behaviour (client-go):
- `plugin/pkg/client/auth/exec/exec.go`: the plugin runs again once `expirationTimestamp` has
  passed (`credsExpired`), and after a 401 to a request made with the current credentials
  (`maybeRefreshCreds`); one authenticator serves every client of the user.
- `rest/exec.go` `ConfigToExecCluster`: with `provideClusterInfo` the CA goes to the plugin as
  data, read from `certificate-authority` when the kubeconfig names a file.
- `transport/token_source.go` `NewCachedFileTokenSource`: `tokenFile` is read again a minute
  after the last read (10 s early), and after a 401 (`ResetTokenOlderThan`).

The emulator refuses expired and revoked tokens with 401; every path the runtime takes (list,
exec, port-forward, pods/proxy) is driven through the target's own clients.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.kube.emulator import ApiEmulator, make_pod
from tests.kube.emulator.fixtures import EchoServer, HttpTarget
from tests.runtime.kubernetes.paths import clients_of, target_for, write_plugin


def rfc3339(when: float) -> str:
    return (
        datetime.fromtimestamp(when, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def auth_of(api: ApiEmulator, subresource: str = "") -> list[str]:
    return [
        r.headers.get("Authorization", "")
        for r in api.requests
        if r.resource == "pods" and r.subresource == subresource
    ]


@pytest.fixture
def reachable(api: ApiEmulator, echo_server: EchoServer, http_target: HttpTarget) -> None:
    api.add_pod(make_pod("web"))
    api.map_port("web", 8080, echo_server.port)
    api.map_port("web", 8081, http_target.port)


async def test_exec_plugin_runs_again_once_its_expiration_timestamp_has_passed(
    api: ApiEmulator, tmp_path: Path, reachable: None
) -> None:
    expires = time.time() + 1.0
    api.add_token("tok-1", role="admin", expires=expires)
    api.add_token("tok-2", role="admin")
    entry, plugin = write_plugin(
        tmp_path / "plugin",
        [{"token": "tok-1", "expirationTimestamp": rfc3339(expires)}, {"token": "tok-2"}],
    )
    target = target_for(api, tmp_path, user={"exec": entry})
    async with clients_of(target) as c:
        assert await c.list_status() == 200
        assert (await c.exec(["true"])).exit_code == 0
        assert len(plugin.runs) == 1  # one run serves both clients
        await asyncio.sleep(max(0.0, expires - time.time()) + 0.05)
        # each path after the expiry: the websocket first, so it is the one that refreshes
        assert (await c.exec(["true"])).exit_code == 0
        assert await c.forward(8080) == b"ping"
        assert await c.list_status() == 200
        assert await c.relay(8081) == 200
    assert len(plugin.runs) == 2
    assert auth_of(api)[-1] == "Bearer tok-2"
    assert auth_of(api, "exec")[-1] == "Bearer tok-2"
    assert auth_of(api, "portforward")[-1] == "Bearer tok-2"
    assert auth_of(api, "proxy")[-1] == "Bearer tok-2"
    assert "Bearer tok-1" not in auth_of(api, "portforward") + auth_of(api, "proxy")


async def test_a_401_runs_the_plugin_again_for_the_next_request_on_every_client(
    api: ApiEmulator, tmp_path: Path, reachable: None
) -> None:
    for token in ("tok-1", "tok-2", "tok-3", "tok-4", "tok-5"):
        api.add_token(token, role="admin")
    # no expirationTimestamp: only a 401 says the token is done
    entry, plugin = write_plugin(tmp_path / "plugin", [{"token": f"tok-{n}"} for n in range(1, 6)])
    target = target_for(api, tmp_path, user={"exec": entry})
    async with clients_of(target) as c:
        assert await c.list_status() == 200
        api.revoke_token("tok-1")
        assert await c.list_status() == 401
        assert await c.list_status() == 200
        api.revoke_token("tok-2")
        out = await c.exec(["true"])
        assert out.error is not None and out.error.startswith("unauthorized")
        assert (await c.exec(["true"])).exit_code == 0
        api.revoke_token("tok-3")
        assert await c.relay(8081) == 401
        assert await c.relay(8081) == 200
        api.revoke_token("tok-4")
        with pytest.raises(Exception, match="unauthorized"):
            await c.forward(8080)
        assert await c.forward(8080) == b"ping"
    assert len(plugin.runs) == 5
    assert auth_of(api, "portforward")[-1] == "Bearer tok-5"


async def test_a_401_to_an_old_token_does_not_run_the_plugin_again(
    api: ApiEmulator, tmp_path: Path
) -> None:
    """maybeRefreshCreds: credentials rotated since the request was made are kept."""
    api.add_token("tok-1", role="admin")
    api.add_token("tok-2", role="admin")
    entry, plugin = write_plugin(tmp_path / "plugin", [{"token": "tok-1"}, {"token": "tok-2"}])
    target = target_for(api, tmp_path, user={"exec": entry})
    async with clients_of(target) as c:
        assert await c.list_status() == 200
        source = target.token_source
        assert source is not None
        source.unauthorized("Bearer some-older-token", time.time())
        assert await c.list_status() == 200
    assert len(plugin.runs) == 1


async def test_provide_cluster_info_inlines_a_certificate_authority_file(
    tmp_path: Path,
) -> None:
    async with ApiEmulator(tls=True) as api:
        assert api.ca_file is not None and api.ca_pem is not None
        entry, plugin = write_plugin(tmp_path / "plugin", [{"token": api.token}])
        entry["provideClusterInfo"] = True
        # the kubeconfig names the CA file only
        doc_cluster = {
            "certificate-authority-data": None,
            "certificate-authority": str(api.ca_file),
            "extensions": [
                {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "x"}}
            ],
        }
        target = target_for(api, tmp_path, user={"exec": entry}, cluster=doc_cluster)
        async with clients_of(target) as c:
            assert await c.list_status() == 200
    info = json.loads(plugin.runs[0])
    sent = info["spec"]["cluster"]
    assert base64.b64decode(sent["certificate-authority-data"]) == api.ca_pem
    assert sent["server"] == api.url
    assert sent["config"] == {"audience": "x"}
    assert info["spec"]["interactive"] is False


async def test_token_file_is_read_again_a_minute_less_the_leeway_later(
    api: ApiEmulator, tmp_path: Path, reachable: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("file-1\n", encoding="utf-8")
    for token in ("file-1", "file-2"):
        api.add_token(token, role="admin")
    target = target_for(api, tmp_path, user={"tokenFile": str(token_file)})
    async with clients_of(target) as c:
        from probetui.runtime.kubernetes import credentials

        assert await c.list_status() == 200
        source = target.token_source
        assert isinstance(source, credentials.FileTokenSource)
        # the file changes: within the minute the old token is still sent
        token_file.write_text("file-2\n", encoding="utf-8")
        monkeypatch.setattr(source, "clock", lambda: time.time() + 49.0)
        assert await c.list_status() == 200
        assert auth_of(api)[-1] == "Bearer file-1"
        # 50 s after the read it is read again, for every client
        monkeypatch.setattr(source, "clock", lambda: time.time() + 51.0)
        assert (await c.exec(["true"])).exit_code == 0
        assert await c.forward(8080) == b"ping"
        assert await c.relay(8081) == 200
    assert auth_of(api, "exec")[-1] == "Bearer file-2"
    assert auth_of(api, "portforward")[-1] == "Bearer file-2"
    assert auth_of(api, "proxy")[-1] == "Bearer file-2"


async def test_token_file_is_read_again_at_once_after_a_401(
    api: ApiEmulator, tmp_path: Path, reachable: None
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("file-1\n", encoding="utf-8")
    for token in ("file-1", "file-2", "file-3"):
        api.add_token(token, role="admin")
    target = target_for(api, tmp_path, user={"tokenFile": str(token_file)})
    async with clients_of(target) as c:
        assert await c.list_status() == 200
        token_file.write_text("file-2\n", encoding="utf-8")
        api.revoke_token("file-1")
        assert await c.relay(8081) == 401
        assert await c.relay(8081) == 200
        token_file.write_text("file-3\n", encoding="utf-8")
        api.revoke_token("file-2")
        out = await c.exec(["true"])
        assert out.error is not None and out.error.startswith("unauthorized")
        assert (await c.exec(["true"])).exit_code == 0
    assert auth_of(api, "proxy")[-1] == "Bearer file-2"
    assert auth_of(api, "exec")[-1] == "Bearer file-3"


async def test_token_file_period_is_client_gos_minute() -> None:
    from probetui.runtime.kubernetes import credentials

    assert credentials.TOKEN_FILE_PERIOD == 60.0
    assert credentials.TOKEN_FILE_LEEWAY == 10.0


async def test_service_account_token_is_read_again_after_a_401_in_cluster(tmp_path: Path) -> None:
    """In a pod, client-go reads the projected token through the same file source."""
    from probetui.runtime.kubernetes.config import ConnectOptions, resolve

    async with ApiEmulator(tls=True) as api:
        sa = tmp_path / "serviceaccount"
        files = api.in_cluster_files(sa)
        home = tmp_path / "home"
        home.mkdir()
        environ = {
            "HOME": str(home),
            "KUBERNETES_SERVICE_HOST": files["KUBERNETES_SERVICE_HOST"],
            "KUBERNETES_SERVICE_PORT": files["KUBERNETES_SERVICE_PORT"],
        }
        target = resolve(ConnectOptions(), environ=environ, service_account_dir=sa)
        assert target.in_cluster
        api.add_token("rotated", role="admin")
        async with clients_of(target) as c:
            assert await c.list_status() == 200
            # the kubelet rotates the projected token; the old one stops working
            (sa / "token").write_text("rotated", encoding="utf-8")
            api.revoke_token(api.token or "")
            assert await c.list_status() == 401
            assert await c.list_status() == 200
        assert auth_of(api)[-1] == "Bearer rotated"
