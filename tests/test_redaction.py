"""Secrets never reach an output or a file: the one redaction policy (`probetui.redact`).

First the rules, one kind of secret each; then the real paths: `probetui local` headless with
`--record` and `--output jsonl` over a real HTTP server on 127.0.0.1 and a real exec probe,
read back raw, through the reader and through `probetui replay`; the screen's SVG screenshot,
live and replayed; the kubelet's own events from the cluster (the API emulator). Each real
path also checks that the probe as sent still carries the real value.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from probetui.redact import (
    MASK,
    MIN_NAMED,
    MIN_OTHER,
    Policy,
    Redactor,
    argv_spans,
    mask,
    redact_pod,
)
from probetui.spec.model import (
    Container,
    EnvVar,
    ExecAction,
    HTTPGetAction,
    HTTPHeader,
    Pod,
    Probe,
)

ROOT = Path(__file__).resolve().parents[1]

# -- the rules ------------------------------------------------------------------------------


def _pod(**container: Any) -> Pod:
    return Pod(name="p", uid="uid-p", containers=(Container(name="app", **container),))


def test_env_values_are_masked_unless_allow_listed() -> None:
    pod = _pod(
        env=(
            EnvVar("DB_PASSWORD", "hunter2-db"),
            EnvVar("LOG_LEVEL", "debug"),
            EnvVar("FROM_SECRET", value_from={"secretKeyRef": {"name": "s", "key": "k"}}),
        )
    )
    shown, secrets = redact_pod(pod, Policy.of(env=["LOG_LEVEL"]))
    env = {e.name: e for e in shown.containers[0].env}
    assert env["DB_PASSWORD"].value == MASK
    assert env["LOG_LEVEL"].value == "debug"
    # a reference names no value: kept as written
    assert env["FROM_SECRET"].value is None and env["FROM_SECRET"].value_from
    assert secrets == ("hunter2-db",)
    # the prober's pod is untouched
    assert pod.containers[0].env[0].value == "hunter2-db"
    # without the allow-list every value is a secret
    assert redact_pod(pod)[0].containers[0].env[1].value == MASK


def test_query_values_are_masked_unless_allow_listed() -> None:
    probe = Probe(http_get=HTTPGetAction(port=80, path="/h?token=abc123xyz&verbose=1&x=%2Fpath1"))
    shown, secrets = redact_pod(_pod(readiness_probe=probe), Policy.of(query=["verbose"]))
    path = shown.containers[0].readiness_probe.http_get.path  # type: ignore[union-attr]
    assert path == f"/h?token={MASK}&verbose=1&x={MASK}"
    # the value as written and as a server decodes it, to mask where either is echoed
    assert {"abc123xyz", "%2Fpath1", "/path1"} <= set(secrets)
    # in a text: a target, a Go error quoting the URL
    text = 'Get "http://10.0.0.1:8080/h?token=abc&verbose=1": context deadline exceeded'
    assert mask(text, (), Policy.of(query=["verbose"])) == (
        f'Get "http://10.0.0.1:8080/h?token={MASK}&verbose=1": context deadline exceeded'
    )


def test_header_values_are_masked_but_the_harmless_ones() -> None:
    headers = (
        HTTPHeader("Authorization", "Bearer tok-123456"),
        HTTPHeader("X-Session", "sess-abcdef"),
        HTTPHeader("X-Tenant", "acme"),
        HTTPHeader("accept", "application/json"),
        HTTPHeader("User-Agent", "probe"),
    )
    probe = Probe(http_get=HTTPGetAction(port=80, http_headers=headers))
    shown, secrets = redact_pod(_pod(readiness_probe=probe), Policy.of(headers=["x-tenant"]))
    got = {h.name: h.value for h in shown.containers[0].readiness_probe.http_get.http_headers}  # type: ignore[union-attr]
    assert got == {
        "Authorization": MASK,
        "X-Session": MASK,
        "X-Tenant": "acme",
        "accept": "application/json",
        "User-Agent": "probe",
    }
    # "Bearer X": the token alone is searched for too
    assert {"Bearer tok-123456", "tok-123456", "sess-abcdef"} <= set(secrets)


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["app", "--password=hunter2"], ["app", f"--password={MASK}"]),
        (["app", "--password", "hunter2", "-v"], ["app", "--password", MASK, "-v"]),
        (["app", "--db-token", "t0k3n"], ["app", "--db-token", MASK]),
        (["app", "--token-file", "/run/t"], ["app", "--token-file", "/run/t"]),
        (["mysql", "-u", "root", "-pS3cret"], ["mysql", "-u", "root", f"-p{MASK}"]),
        (["/usr/bin/mysqladmin", "ping", "-pS3cret"], ["/usr/bin/mysqladmin", "ping", f"-p{MASK}"]),
        # -p is a port (or mysql's prompt) where it stands alone, and for other tools
        (["mysql", "-p", "shop"], ["mysql", "-p", "shop"]),
        (["pg_isready", "-p5432"], ["pg_isready", "-p5432"]),
        (["redis-cli", "-p", "6379", "ping"], ["redis-cli", "-p", "6379", "ping"]),
        (["redis-cli", "-a", "s3cret", "ping"], ["redis-cli", "-a", MASK, "ping"]),
        (["curl", "-u", "admin:pw", "http://x"], ["curl", "-u", f"admin:{MASK}", "http://x"]),
        (["curl", "--user=admin:pw"], ["curl", f"--user=admin:{MASK}"]),
        (["curl", "-H", "X-Session: abc", "-H", "Accept: a/b"], None),
        (["mongo", "admin:pw@db:27017"], ["mongo", f"admin:{MASK}@db:27017"]),
        (["psql", "postgres://u:pw@db/x"], ["psql", f"postgres://u:{MASK}@db/x"]),
        (["env", "API_KEY=abc", "run"], ["env", f"API_KEY={MASK}", "run"]),
        (
            ["sh", "-c", "mysql -uroot -pS3cret -e 'select 1' && curl -u a:b http://x"],
            ["sh", "-c", f"mysql -uroot -p{MASK} -e 'select 1' && curl -u a:{MASK} http://x"],
        ),
        (["bash", "-c", "check --password=hunter2"], ["bash", "-c", f"check --password={MASK}"]),
        # a variable names the secret, it is not one: the value is masked where it shows
        (["sh", "-c", "mysql -p$MYSQL_PWD"], ["sh", "-c", "mysql -p$MYSQL_PWD"]),
        (["app", "--password=$(DB_PASSWORD)"], ["app", "--password=$(DB_PASSWORD)"]),
    ],
)
def test_argument_rules(argv: list[str], shown: list[str] | None) -> None:
    if shown is None:  # curl's headers: the value unless the name is a harmless one
        shown = ["curl", "-H", f"X-Session: {MASK}", "-H", "Accept: a/b"]
    probe = Probe(exec=ExecAction(tuple(argv)))
    got, _ = redact_pod(_pod(command=tuple(argv), liveness_probe=probe))
    assert list(got.containers[0].liveness_probe.exec.command) == shown  # type: ignore[union-attr]
    assert list(got.containers[0].command) == shown
    # the same argument rules on the command line as a text (an exec target is argv joined)
    assert mask(" ".join(argv)) == " ".join(shown)


def test_a_quoted_value_is_masked_in_every_argument_it_spans() -> None:
    argv = ["app", 'password="a', 'b"']
    spans = argv_spans(argv)
    assert spans == [[], [(10, 11)], [(0, 1)]]


def test_known_values_are_masked_where_they_reappear_from_a_minimum_length() -> None:
    env = (
        EnvVar("DB_PASSWORD", "root"),  # credential-named: searched from MIN_NAMED
        EnvVar("PORT", "8080"),  # masked where it stands, not searched (shorter than MIN_OTHER)
        EnvVar("MODE", "turbo-mode"),
    )
    assert len("root") == MIN_NAMED and len("8080") < MIN_OTHER
    redactor = Redactor()
    shown = redactor.pod(_pod(env=env))
    assert {e.value for e in shown.pod.containers[0].env} == {MASK}
    out = redactor.text(shown, "user root on port 8080 in turbo-mode")
    assert out == f"user {MASK} on port 8080 in {MASK}"


def test_an_allow_listed_value_still_goes_through_the_rules() -> None:
    env = (EnvVar("DB_URL", "postgres://app:pw-1234@db/x"), EnvVar("LOG_LEVEL", "debug"))
    shown, secrets = redact_pod(_pod(env=env), Policy.of(env=["DB_URL", "LOG_LEVEL"]))
    values = [e.value for e in shown.containers[0].env]
    assert values == [f"postgres://app:{MASK}@db/x", "debug"]
    assert secrets == ("pw-1234",)


def test_allow_listed_names_stay_clear_in_text_and_credentials_do_not() -> None:
    policy = Policy.of(env=["KEYCLOAK_URL"])
    assert mask("KEYCLOAK_URL=http://kc:8080", (), policy) == "KEYCLOAK_URL=http://kc:8080"
    assert mask("KEYCLOAK_URL=http://kc:8080") == f"KEYCLOAK_URL={MASK}"
    for text, masked in [
        ("sent Authorization: Basic dXNlcjpwYXNz", f"sent Authorization: {MASK}"),
        ("Readiness probe failed: Authorization: Bearer t0k3n", "Readiness probe failed: "),
        ('{"password": "a b c", "user": "x"}', f'{{"password": "{MASK}", "user": "x"}}'),
        ("http://user:pw@127.0.0.1/x", f"http://user:{MASK}@127.0.0.1/x"),
        ("HTTP probe failed with statuscode: 503", "HTTP probe failed with statuscode: 503"),
    ]:
        assert mask(text).startswith(masked), text


def test_masking_is_idempotent() -> None:
    for text in (
        "GET /h?token=abc&x=1",
        "mysql -pS3cret; curl -u a:b http://u:p@h/?k=v",
        "Authorization: Bearer abcdefgh",
    ):
        once = mask(text, ("abc",))
        assert mask(once, ("abc",)) == once


def test_a_body_cut_to_what_is_kept_never_keeps_part_of_a_secret() -> None:
    # what the store and the file keep of a body is its head: a secret across the cut is
    # masked whole, not cut in two with its first characters kept
    for secret in ("QUERYSECRET77", "x" * 100):
        for at in range(2040, 2050):
            body = "a" * at + secret + " and more" * 1000
            out = mask(body, (secret,), limit=2048)
            assert len(out) <= 2048 + len(MASK)
            assert "QUERY" not in out and "x" not in out, (secret, at)
    out = mask("a" * 2040 + " token=abcdefghij" + "b" * 5000, limit=2048)
    assert out.endswith(f" token={MASK}")


@pytest.mark.timeout(20)
def test_a_long_word_is_masked_in_one_pass() -> None:
    # a 10 KiB body of one base64 word: the rules start only where a word does (no backtracking
    # through the word from every position, which would take minutes)
    body = "QUJD" * 2560
    assert mask(body + " token=x") == body + f" token={MASK}"


# -- the real path: probetui local, headless, recorded, replayed ----------------------------

TOKEN = "QUERYSECRET77"
SESSION = "SESSIONSECRET5"
DB_PASSWORD = "ENVSECRET-1234"
ARG = "ARGSECRET3"
CURL_PW = "CURLPASS9"
SECRETS = (TOKEN, SESSION, DB_PASSWORD, ARG, CURL_PW)


class _Echo(BaseHTTPRequestHandler):
    """Answers 503 with a body that echoes the query and the X-Session header, the token last
    after 5,000 characters (past what the store keeps of a body: masked whole, then cut)."""

    seen: ClassVar[list[tuple[str, str]]] = []

    def do_GET(self) -> None:
        session = self.headers.get("X-Session", "")
        type(self).seen.append((self.path, session))
        body = f"session={session} path={self.path} {'x' * 5000} {TOKEN}".encode()
        self.send_response(503)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def echo_server() -> Iterator[tuple[int, list[tuple[str, str]]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], _Echo.seen
    finally:
        server.shutdown()
        server.server_close()


def _manifest(tmp: Path, port: int) -> Path:
    seen = tmp / "seen"
    script = f'echo "$DB_PASSWORD" > {seen}; echo "db=$DB_PASSWORD"; echo "arg=$1"; exit 1'
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "secrets"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    # the container prints its own env: its output tail is masked too
                    "command": ["sh", "-c", 'echo "starting with $DB_PASSWORD"; exec sleep 60'],
                    "args": ["curl", "-u", f"admin:{CURL_PW}"],
                    "env": [
                        {"name": "DB_PASSWORD", "value": DB_PASSWORD},
                        {"name": "LOG_LEVEL", "value": "debugging"},
                    ],
                    "readinessProbe": {
                        "httpGet": {
                            "port": port,
                            "path": f"/echo?token={TOKEN}&verbose=yes",
                            "httpHeaders": [
                                {"name": "X-Session", "value": SESSION},
                                {"name": "Accept", "value": "text/plain"},
                            ],
                        },
                        "periodSeconds": 1,
                    },
                    "livenessProbe": {
                        "exec": {"command": ["sh", "-c", script, "probe", f"--password={ARG}"]},
                        "periodSeconds": 1,
                        "failureThreshold": 100,
                    },
                }
            ]
        },
    }
    path = tmp / "pod.json"
    path.write_text(json.dumps(doc))
    return path


def _config(tmp: Path) -> Path:
    path = tmp / "config.yaml"
    path.write_text("redact:\n  allowEnv: [LOG_LEVEL]\n  allowQuery: [verbose]\n")
    return path


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _probetui(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "probetui.cli", *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=timeout,
        check=False,
    )


def _assert_clean(text: str | bytes, where: str) -> None:
    for secret in SECRETS:
        needle = secret.encode() if isinstance(text, bytes) else secret
        assert needle not in text, f"{secret} in {where}"


def _assert_files_clean(folder: Path, prefix: str) -> None:
    """The recording and its -wal / -shm / -lock files, byte for byte."""
    files = [f for f in folder.iterdir() if f.name.startswith(prefix)]
    assert files
    for f in files:
        _assert_clean(f.read_bytes(), f.name)


class Run:
    def __init__(self, tmp: Path, out: str, err: str, seen: list[tuple[str, str]]) -> None:
        self.tmp = tmp
        self.recording = tmp / "rec.db"
        self.lines = [json.loads(line) for line in out.splitlines() if line.strip()]
        self.out, self.err, self.seen = out, err, seen


def _run_local(tmp: Path, port: int, seen: list[tuple[str, str]], shards: str) -> Run:
    manifest = _manifest(tmp, port)
    done = _probetui(
        "--config",
        str(_config(tmp)),
        "local",
        str(manifest),
        "--no-ui",
        "--output",
        "jsonl",
        "--record",
        str(tmp / "rec.db"),
        "--duration",
        "3.5",
        "--shards",
        shards,
    )
    assert done.returncode == 0, done.stderr
    return Run(tmp, done.stdout, done.stderr, list(seen))


@pytest.fixture(scope="module")
def local_run(
    tmp_path_factory: pytest.TempPathFactory, echo_server: tuple[int, list[tuple[str, str]]]
) -> Run:
    port, seen = echo_server
    return _run_local(tmp_path_factory.mktemp("local"), port, seen, "0")


@pytest.mark.slow
def test_the_probes_as_sent_carry_the_real_values(local_run: Run) -> None:
    # the HTTP probe's query and header, and the exec probe's environment, as the app got them
    assert (f"/echo?token={TOKEN}&verbose=yes", SESSION) in local_run.seen
    assert (local_run.tmp / "seen").read_text().strip() == DB_PASSWORD


@pytest.mark.slow
def test_live_jsonl_holds_no_secret_and_shows_names_and_shapes(local_run: Run) -> None:
    _assert_clean(local_run.out, "stdout")
    _assert_clean(local_run.err, "stderr")
    attempts = [x for x in local_run.lines if x["type"] == "ProbeAttempt"]
    http = next(x for x in attempts if x["probe"] == "readiness")
    assert http["target"].endswith(f"/echo?token={MASK}&verbose=yes")
    assert http["statusCode"] == 503
    exec_ = next(x for x in attempts if x["probe"] == "liveness")
    assert f"--password={MASK}" in exec_["target"]
    assert exec_["output"] == f"db={MASK}\narg=--password={MASK}\n"
    unhealthy = [x for x in local_run.lines if x["type"] == "Unhealthy"]
    assert any(f"db={MASK}" in x["message"] for x in unhealthy)


@pytest.mark.slow
def test_the_recording_holds_no_secret_raw_or_decoded(local_run: Run) -> None:
    from probetui.record.reader import open_recording

    _assert_files_clean(local_run.tmp, "rec.db")
    # every text column of every table, as SQLite decodes it
    conn = sqlite3.connect(f"file:{local_run.recording}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}"):
                _assert_clean(repr(row), table)
    finally:
        conn.close()
    with open_recording(local_run.recording) as r:
        (uid,) = [p.uid for p in r.pods()]
        span = r.span()
        assert span is not None
        spec = r.spec_at(uid, span[1])
        c = spec.containers[0]
        assert {e.name: e.value for e in c.env} == {"DB_PASSWORD": MASK, "LOG_LEVEL": "debugging"}
        assert c.args == ("curl", "-u", f"admin:{MASK}")
        http = c.readiness_probe.http_get  # type: ignore[union-attr]
        assert http.path == f"/echo?token={MASK}&verbose=yes"
        assert [(h.name, h.value) for h in http.http_headers] == [
            ("X-Session", MASK),
            ("Accept", "text/plain"),
        ]
        assert c.liveness_probe.exec.command[-1] == f"--password={MASK}"  # type: ignore[union-attr]
        texts = []
        for e in r.events():
            texts.append(json.dumps(e.fields, default=str))
            o = e.record.outcome if e.record is not None else None
            if o is not None:
                texts += [a.output + a.target + (a.body or "") for a in o.attempts]
        joined = "\n".join(texts)
        _assert_clean(joined, "the reader's events")
        assert f"session={MASK}" in joined and f"db={MASK}" in joined


@pytest.mark.slow
def test_replay_shows_what_live_showed(local_run: Run) -> None:
    done = _probetui("replay", str(local_run.recording), "--no-ui", "--output", "jsonl")
    assert done.returncode == 0, done.stderr
    _assert_clean(done.stdout, "replay")
    replayed = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]

    def texts(lines: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
        return {
            (x["probe"], x.get("target"), x.get("output"), x.get("event"))
            for x in lines
            if x["type"] == "ProbeAttempt"
        }

    assert texts(replayed) == texts(local_run.lines)


@pytest.mark.slow
def test_shards_mask_by_the_same_policy(
    tmp_path: Path, echo_server: tuple[int, list[tuple[str, str]]]
) -> None:
    port, seen = echo_server
    run = _run_local(tmp_path, port, seen, "2")
    _assert_clean(run.out, "stdout")
    _assert_files_clean(tmp_path, "rec.db")
    http = next(x for x in run.lines if x["type"] == "ProbeAttempt" and x["probe"] == "readiness")
    # the allow-list travelled to the shard with its hello
    assert http["target"].endswith(f"/echo?token={MASK}&verbose=yes")


# -- the screen ----------------------------------------------------------------------------


def _read_svg(shots: Path) -> str:
    """The screenshot's text as drawn (tags out, entities decoded), checked raw as well."""
    (path,) = list(shots.iterdir())
    raw = path.read_text()
    _assert_clean(raw, path.name)
    text = html.unescape(re.sub(r"<[^>]+>", "", raw)).replace("\xa0", " ")
    _assert_clean(text, f"the text of {path.name}")
    return text


async def _screenshot(app: Any, pilot: Any, shots: Path) -> str:
    await pilot.press("s")
    await pilot.pause()
    return _read_svg(shots)


@pytest.mark.slow
async def test_the_live_screen_and_its_screenshot_hold_no_secret(
    tmp_path: Path, echo_server: tuple[int, list[tuple[str, str]]]
) -> None:
    from probetui.engine import Engine
    from probetui.runtime.local.runtime import LocalRuntime
    from probetui.spec.parse import load_pods
    from probetui.timeline.store import Store
    from probetui.ui.app import ProbeApp
    from probetui.ui.widgets.attempts import AttemptLog

    port, _ = echo_server
    pods = load_pods(_manifest(tmp_path, port))
    runtime = LocalRuntime(pods, source="test")
    runtime.redaction = Policy.of(env=["LOG_LEVEL"], query=["verbose"])
    store = Store()
    app = ProbeApp(Engine(runtime, [store]), store, screenshot_dir=tmp_path / "shots")
    (tmp_path / "shots").mkdir()
    async with app.run_test(size=(160, 45)) as pilot:
        deadline = asyncio.get_running_loop().time() + 10
        while not any((h := store.probe(k)) is not None and len(h) > 1 for k in list(store.probes)):
            assert asyncio.get_running_loop().time() < deadline, "no attempts"
            await asyncio.sleep(0.05)
        await pilot.press("enter")  # details: the attempts with their targets and events
        await pilot.pause(0.3)
        log = app.query_one(AttemptLog).render().plain
        _assert_clean(log, "the attempt log")
        svg = await _screenshot(app, pilot, tmp_path / "shots")
        assert f"token={MASK}&verbose=yes" in svg and f"[X-Session: {MASK}]" in svg
        await pilot.press("o")  # the container's own output: it printed its password
        await pilot.pause(0.3)
        tail = app.query_one(AttemptLog).render().plain
        assert f"starting with {MASK}" in tail
        await pilot.press("q")
        await pilot.pause()


@pytest.mark.slow
async def test_the_replay_screen_and_its_screenshot_hold_no_secret(
    local_run: Run, tmp_path: Path
) -> None:
    from probetui.record.reader import open_recording
    from probetui.replay.player import Player
    from probetui.ui.app import ProbeApp
    from probetui.ui.screens.replay import ReplayScreen

    with open_recording(local_run.recording) as recording:
        player = Player(recording)
        app = ProbeApp(
            player,
            player.store,
            now=player.now,
            screenshot_dir=tmp_path,
            make_screen=lambda ctx: ReplayScreen(ctx, player),
        )
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.pause(0.3)
            await pilot.press("enter")
            await pilot.pause(0.3)
            svg = await _screenshot(app, pilot, tmp_path)
            assert f"token={MASK}&verbose=yes" in svg and f"[X-Session: {MASK}]" in svg
            await pilot.press("q")
            await pilot.pause()


# -- the kubelet's own events, from the cluster ----------------------------------------------


@pytest.mark.slow
async def test_the_kubelets_events_are_masked_as_they_enter_from_the_cluster(
    tmp_path: Path,
) -> None:
    from tests.kube.emulator import ApiEmulator, container, make_pod

    pod = make_pod(
        "db",
        containers=[
            container(
                "app",
                liveness={
                    "exec": {"command": ["sh", "-c", "mysqladmin ping -u root -p$(DB_PASSWORD)"]},
                    "periodSeconds": 1,
                    "timeoutSeconds": 1,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                },
            )
        ],
    )
    pod["spec"]["containers"][0]["env"] = [{"name": "DB_PASSWORD", "value": DB_PASSWORD}]
    env = {k: v for k, v in _env().items() if k != "KUBECONFIG" and "PROXY" not in k.upper()}
    env["HOME"] = str(tmp_path)
    async with ApiEmulator() as api:
        api.add_pod(pod)
        config = api.kubeconfig(tmp_path / "kubeconfig")
        record = tmp_path / "k.db"
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "probetui.cli",
            "--kubeconfig",
            str(config),
            "-n",
            "default",
            "--read-only",
            "--no-ui",
            "--output",
            "jsonl",
            "--record",
            str(record),
            "--duration",
            "3",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        await api.wait_for_watch("events", timeout=10)
        # the kubelet quotes the command as it ran it: $(DB_PASSWORD) expanded
        api.record_event(
            "db",
            "Unhealthy",
            "Liveness probe errored and resulted in unknown state: rpc error: code = "
            "DeadlineExceeded desc = failed to exec in container: timeout 1s exceeded: "
            f'command "sh -c mysqladmin ping -u root -p{DB_PASSWORD}" timed out',
        )
        api.record_event("db", "Unhealthy", f"Liveness probe failed: password {DB_PASSWORD} wrong")
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0, err.decode()
    text = out.decode()
    _assert_clean(text, "stdout")
    messages = [json.loads(x)["message"] for x in text.splitlines() if '"Unhealthy"' in x]
    assert len(messages) == 2
    assert f"-p{MASK}" in messages[0] and f"password {MASK} wrong" in messages[1]
    _assert_files_clean(tmp_path, "k.db")


# -- the configuration ---------------------------------------------------------------------


def test_the_allow_lists_come_from_the_config_files(tmp_path: Path) -> None:
    from probetui.cli.config import redaction
    from probetui.config import load

    system = tmp_path / "system.yaml"
    system.write_text("redact:\n  allowEnv: [LANG]\n  allowHeaders: [X-Tenant]\n")
    user = tmp_path / "user.yaml"
    user.write_text("redact:\n  allowEnv: [LOG_LEVEL, PORT]\n")
    environ = {"PROBETUI_SYSTEM_CONFIG": str(system)}
    config = load(str(user), environ)
    policy = redaction(config)
    # a list the user file gives replaces the system file's; the others stand
    assert policy == Policy.of(env=["LOG_LEVEL", "PORT"], headers=["x-tenant"])
    sourced = config.redaction()
    assert sourced["allowEnv"].source == f"user file {user}"
    assert sourced["allowQuery"].value == () and sourced["allowQuery"].source == "default"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("redact:\n  allowEnv: LOG_LEVEL\n", "redact.allowEnv: expected a list of names"),
        ("redact:\n  allowQueries: [x]\n", "redact.allowQueries: unknown key (did you mean"),
        ("redact: [x]\n", "redact: expected a mapping"),
    ],
)
def test_a_bad_redact_setting_is_one_line(
    tmp_path: Path, body: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from probetui.cli import main

    path = tmp_path / "c.yaml"
    path.write_text(body)
    assert main(["--config", str(path), "config", "--context", "x"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_probetui_config_shows_the_allow_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from probetui.cli import main

    path = tmp_path / "c.yaml"
    path.write_text("redact:\n  allowQuery: [verbose, format]\n")
    assert main(["--config", str(path), "config", "--context", "x"]) == 0
    out = capsys.readouterr().out
    assert "redact.allowQuery" in out and "verbose, format" in out
    assert "redact.allowEnv" in out and "every value masked" in out


# -- the other commands ----------------------------------------------------------------------


def test_lint_findings_quote_the_probe_masked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from probetui.cli import main

    probes = {
        "app": {"httpGet": {"path": f"/h?token={TOKEN}", "port": 8080}, "timeoutSeconds": 2},
        "db": {"exec": {"command": ["sh", "-c", f"mysql -uroot -p{ARG}"]}, "timeoutSeconds": 2},
    }
    containers = [
        {"name": name, "image": "x", "livenessProbe": p, "readinessProbe": p}
        for name, p in probes.items()
    ]
    path = tmp_path / "pod.json"
    path.write_text(
        json.dumps({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}})
    )
    for output in ("human", "json", "sarif"):
        main(["lint", str(path), "--output", output, "--fail-on", "never"])
        out = capsys.readouterr().out
        _assert_clean(out, f"lint --output {output}")
        assert f"token={MASK}" in out and f"-p{MASK}" in out


@pytest.mark.slow
def test_check_prints_the_probe_masked_and_sends_it_whole(
    echo_server: tuple[int, list[tuple[str, str]]],
) -> None:
    port, seen = echo_server
    url = f"http://127.0.0.1:{port}/echo?token={TOKEN}"
    for json_flag in ((), ("--json",)):
        done = _probetui(
            "check", "--http-get", url, "--header", f"X-Session: {SESSION}", *json_flag
        )
        assert done.returncode == 1, done.stderr
        _assert_clean(done.stdout, "check")
        target = json.loads(done.stdout)["target"] if json_flag else done.stdout
        assert f"token={MASK}" in target
    assert (f"/echo?token={TOKEN}", SESSION) in seen
    script = 'echo "got $1"; exit 1'
    done = _probetui("check", "--exec", "--", "sh", "-c", script, "probe", f"--password={ARG}")
    assert done.returncode == 1, done.stderr
    _assert_clean(done.stdout, "check --exec")
    assert f"--password={MASK}" in done.stdout and f"got --password={MASK}" in done.stdout
