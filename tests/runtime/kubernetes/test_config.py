"""kubeconfig loading like kubectl: merge rules, context, namespace, in-cluster, errors.

Where `kubectl` is installed, the merge cases are also checked against it as an independent
implementation of the same rules (`kubectl config view` reads files only, no network).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client import CoreV1Api

from probetui.runtime.base import RuntimeFailure
from probetui.runtime.kubernetes import config as config_module
from probetui.runtime.kubernetes.config import (
    ConnectOptions,
    KubeconfigError,
    resolve,
)
from probetui.runtime.kubernetes.guard import ReadOnlyViolation
from tests.runtime.kubernetes.conftest import Recorder


def kubeconfig(
    clusters: dict[str, dict[str, Any]] | None = None,
    users: dict[str, dict[str, Any]] | None = None,
    contexts: dict[str, dict[str, Any]] | None = None,
    current: str | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "preferences": {}}
    doc["clusters"] = [{"name": n, "cluster": c} for n, c in (clusters or {}).items()]
    doc["users"] = [{"name": n, "user": u} for n, u in (users or {}).items()]
    doc["contexts"] = [{"name": n, "context": c} for n, c in (contexts or {}).items()]
    if current is not None:
        doc["current-context"] = current
    return doc


def write(path: Path, doc: dict[str, Any] | str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc), encoding="utf-8")
    return str(path)


def _read(path: str) -> bytes:
    return Path(path).read_bytes()


def _snapshot(path: str) -> tuple[bytes, int]:
    return Path(path).read_bytes(), os.stat(path).st_mtime_ns


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def no_sa(tmp_path: Path) -> Path:
    return tmp_path / "no-service-account"


def env(home: Path, *files: str, **more: str) -> dict[str, str]:
    e = {"HOME": str(home), **more}
    if files:
        e["KUBECONFIG"] = os.pathsep.join(files)
    return e


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[str, str]:
    a = write(
        tmp_path / "a" / "config",
        kubeconfig(
            clusters={"shared": {"server": "https://a.example:6443"}},
            users={"alice": {"token": "from-a"}},
            contexts={
                "dev": {"cluster": "shared", "user": "alice", "namespace": "team-a"},
                "both": {"cluster": "shared", "user": "alice"},
            },
        ),
    )
    b = write(
        tmp_path / "b" / "config",
        kubeconfig(
            clusters={
                "shared": {"server": "https://b.example:6443"},
                "only-b": {"server": "https://only-b.example:6443"},
            },
            users={"alice": {"token": "from-b", "username": "ignored"}, "bob": {"token": "b"}},
            contexts={
                "both": {"cluster": "only-b", "user": "bob"},
                "prod": {"cluster": "only-b", "user": "bob", "namespace": "team-b"},
            },
            current="prod",
        ),
    )
    return a, b


# --- merging ---------------------------------------------------------------------------------


def test_first_file_wins_for_each_cluster_user_and_context_name(
    home: Path, no_sa: Path, two_files: tuple[str, str]
) -> None:
    a, b = two_files
    t = resolve(
        ConnectOptions(context="both"),
        environ=env(home, a, b),
        service_account_dir=no_sa,
    )
    assert (t.cluster, t.user, t.server) == ("shared", "alice", "https://a.example:6443")
    assert t.kubeconfig is not None
    # the whole entry comes from the first file: nothing of b's "alice" is kept
    assert t.kubeconfig["users"] == [{"name": "alice", "user": {"token": "from-a"}}]
    assert t.files == (a, b)


def test_names_only_in_a_later_file_are_still_found(
    home: Path, no_sa: Path, two_files: tuple[str, str]
) -> None:
    a, b = two_files
    t = resolve(ConnectOptions(), environ=env(home, a, b), service_account_dir=no_sa)
    assert (t.context, t.cluster, t.server) == ("prod", "only-b", "https://only-b.example:6443")


def test_current_context_comes_from_the_first_file_that_sets_it(
    tmp_path: Path, home: Path, no_sa: Path
) -> None:
    contexts = {n: {"cluster": "c"} for n in ("x", "y")}
    clusters = {"c": {"server": "https://c.example"}}
    unset = write(tmp_path / "0", kubeconfig(clusters=clusters, contexts=contexts))
    empty = write(tmp_path / "1", kubeconfig(contexts=contexts, current=""))
    first = write(tmp_path / "2", kubeconfig(current="x"))
    later = write(tmp_path / "3", kubeconfig(current="y"))
    e = env(home, unset, empty, first, later)
    assert resolve(ConnectOptions(), environ=e, service_account_dir=no_sa).context == "x"
    # kubernetes-asyncio's own merger would pick the last one; the order is what matters
    e = env(home, unset, later, first)
    assert resolve(ConnectOptions(), environ=e, service_account_dir=no_sa).context == "y"


def test_missing_files_in_kubeconfig_are_skipped_and_duplicates_read_once(
    tmp_path: Path, home: Path, no_sa: Path, two_files: tuple[str, str]
) -> None:
    a, _ = two_files
    missing = str(tmp_path / "nope" / "config")
    t = resolve(
        ConnectOptions(context="dev"),
        environ=env(home, missing, a, "", a),
        service_account_dir=no_sa,
    )
    assert t.files == (a,)
    assert t.context == "dev"


def test_explicit_kubeconfig_is_used_alone(
    home: Path, no_sa: Path, two_files: tuple[str, str]
) -> None:
    a, b = two_files
    t = resolve(ConnectOptions(kubeconfig=b), environ=env(home, a), service_account_dir=no_sa)
    assert t.files == (b,)
    assert (t.context, t.user) == ("prod", "bob")


def test_home_kube_config_is_the_default(home: Path, no_sa: Path) -> None:
    write(
        home / ".kube" / "config",
        kubeconfig(
            clusters={"kind": {"server": "https://127.0.0.1:40000"}},
            contexts={"kind-kind": {"cluster": "kind"}},
            current="kind-kind",
        ),
    )
    t = resolve(ConnectOptions(), environ=env(home), service_account_dir=no_sa)
    assert t.context == "kind-kind"
    assert t.source == "kind-kind/default"


def test_relative_paths_resolve_against_the_file_that_defines_them(
    tmp_path: Path, home: Path, no_sa: Path
) -> None:
    d = tmp_path / "cfg"
    cfg = write(
        d / "config",
        kubeconfig(
            clusters={
                "c": {"server": "https://c.example", "certificate-authority": "pki/ca.crt"},
            },
            users={
                "u": {
                    "client-certificate": "pki/u.crt",
                    "client-key": "../keys/u.key",
                    "tokenFile": "token",
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "bin/cred",
                    },
                },
                "on-path": {"exec": {"apiVersion": "v1", "command": "aws"}},
                "absolute": {"client-certificate": "/etc/pki/u.crt"},
            },
            contexts={
                "ctx": {"cluster": "c", "user": "u"},
                "p": {"cluster": "c", "user": "on-path"},
                "abs": {"cluster": "c", "user": "absolute"},
            },
            current="ctx",
        ),
    )
    t = resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    assert t.kubeconfig is not None
    cluster = t.kubeconfig["clusters"][0]["cluster"]
    user = t.kubeconfig["users"][0]["user"]
    assert cluster["certificate-authority"] == str(d / "pki" / "ca.crt")
    assert user["client-certificate"] == str(d / "pki" / "u.crt")
    assert user["client-key"] == str(tmp_path / "keys" / "u.key")  # cleaned, as Go's Join does
    assert user["tokenFile"] == str(d / "token")
    assert user["exec"]["command"] == str(d / "bin" / "cred")
    p = resolve(ConnectOptions(context="p"), environ=env(home, cfg), service_account_dir=no_sa)
    assert p.kubeconfig is not None
    assert p.kubeconfig["users"][0]["user"]["exec"]["command"] == "aws"
    a = resolve(ConnectOptions(context="abs"), environ=env(home, cfg), service_account_dir=no_sa)
    assert a.kubeconfig is not None
    assert a.kubeconfig["users"][0]["user"]["client-certificate"] == "/etc/pki/u.crt"


# --- namespace -------------------------------------------------------------------------------


def test_namespace_flag_then_context_then_default(
    home: Path, no_sa: Path, two_files: tuple[str, str]
) -> None:
    a, b = two_files
    e = env(home, a, b)
    flag = resolve(ConnectOptions(namespace="ops"), environ=e, service_account_dir=no_sa)
    assert (flag.namespace, flag.namespace_from) == ("ops", "--namespace")
    ctx = resolve(ConnectOptions(context="dev"), environ=e, service_account_dir=no_sa)
    assert (ctx.namespace, ctx.namespace_from) == ("team-a", "context")
    plain = resolve(ConnectOptions(context="both"), environ=e, service_account_dir=no_sa)
    assert (plain.namespace, plain.namespace_from) == ("default", "default")


def test_all_namespaces_and_selector_pass_through(
    home: Path, no_sa: Path, two_files: tuple[str, str]
) -> None:
    a, _ = two_files
    t = resolve(
        ConnectOptions(context="dev", all_namespaces=True, selector="app=web,tier!=db"),
        environ=env(home, a),
        service_account_dir=no_sa,
    )
    assert t.all_namespaces
    assert t.selector == "app=web,tier!=db"
    assert t.source == "dev/*"


# --- in-cluster ------------------------------------------------------------------------------


@pytest.fixture
def service_account(tmp_path: Path) -> Path:
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text("sa-token", encoding="utf-8")
    (sa / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    (sa / "namespace").write_text("monitoring\n", encoding="utf-8")
    return sa


IN_POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


async def test_in_cluster_when_no_kubeconfig_exists(home: Path, service_account: Path) -> None:
    t = resolve(ConnectOptions(), environ=env(home, **IN_POD), service_account_dir=service_account)
    assert t.in_cluster
    assert t.server == "https://10.96.0.1:443"
    assert (t.namespace, t.namespace_from) == ("monitoring", "service account")
    assert t.source == "in-cluster/monitoring"
    # the library's in-cluster loader, on the injected paths; nothing is dialled here
    configuration = await t.client_configuration()
    assert configuration.host == "https://10.96.0.1:443"
    assert configuration.api_key["BearerToken"] == "Bearer sa-token"
    assert configuration.ssl_ca_cert == str(service_account / "ca.crt")


def test_in_cluster_namespace_rules(home: Path, service_account: Path) -> None:
    pod_ns = env(home, POD_NAMESPACE="from-downward-api", **IN_POD)
    t = resolve(ConnectOptions(), environ=pod_ns, service_account_dir=service_account)
    assert (t.namespace, t.namespace_from) == ("from-downward-api", "POD_NAMESPACE")
    t = resolve(ConnectOptions(namespace="x"), environ=pod_ns, service_account_dir=service_account)
    assert (t.namespace, t.namespace_from) == ("x", "--namespace")
    (service_account / "namespace").unlink()
    t = resolve(ConnectOptions(), environ=env(home, **IN_POD), service_account_dir=service_account)
    assert (t.namespace, t.namespace_from) == ("default", "default")


def test_in_cluster_ipv6_service_host_is_bracketed(home: Path, service_account: Path) -> None:
    e = env(home, KUBERNETES_SERVICE_HOST="fd00:10:96::1", KUBERNETES_SERVICE_PORT="443")
    t = resolve(ConnectOptions(), environ=e, service_account_dir=service_account)
    assert t.server == "https://[fd00:10:96::1]:443"


def test_kubeconfig_beats_in_cluster_but_lends_it_the_namespace(
    home: Path, service_account: Path, two_files: tuple[str, str]
) -> None:
    a, _ = two_files
    e = env(home, a, **IN_POD)
    t = resolve(ConnectOptions(context="both"), environ=e, service_account_dir=service_account)
    assert not t.in_cluster
    # client-go: a context without a namespace takes the in-cluster namespace when possible
    assert (t.namespace, t.namespace_from) == ("monitoring", "service account")
    t = resolve(ConnectOptions(context="dev"), environ=e, service_account_dir=service_account)
    assert t.namespace == "team-a"


def test_in_cluster_needs_the_token_file(home: Path, service_account: Path) -> None:
    (service_account / "token").unlink()
    with pytest.raises(KubeconfigError, match="no kubeconfig found"):
        resolve(ConnectOptions(), environ=env(home, **IN_POD), service_account_dir=service_account)


# --- errors ----------------------------------------------------------------------------------


def _one_line(e: pytest.ExceptionInfo[KubeconfigError]) -> str:
    text = str(e.value)
    assert "\n" not in text
    assert isinstance(e.value, RuntimeFailure)
    return text


def test_error_no_kubeconfig(home: Path, no_sa: Path) -> None:
    with pytest.raises(KubeconfigError) as e:
        resolve(ConnectOptions(), environ=env(home), service_account_dir=no_sa)
    text = _one_line(e)
    assert "no kubeconfig found" in text
    assert str(home / ".kube" / "config") in text
    assert "KUBECONFIG" in text and "--kubeconfig" in text


def test_error_explicit_kubeconfig_missing(tmp_path: Path, home: Path, no_sa: Path) -> None:
    missing = str(tmp_path / "missing.yaml")
    with pytest.raises(KubeconfigError) as e:
        resolve(ConnectOptions(kubeconfig=missing), environ=env(home), service_account_dir=no_sa)
    assert f"kubeconfig {missing} not found" in _one_line(e)


def test_error_context_not_found_lists_the_available(
    home: Path, no_sa: Path, two_files: tuple[str, str]
) -> None:
    a, b = two_files
    with pytest.raises(KubeconfigError) as e:
        resolve(
            ConnectOptions(context="staging"), environ=env(home, a, b), service_account_dir=no_sa
        )
    text = _one_line(e)
    assert 'context "staging" not found' in text
    assert "available: both, dev, prod" in text


def test_error_no_current_context(tmp_path: Path, home: Path, no_sa: Path) -> None:
    cfg = write(tmp_path / "c", kubeconfig(contexts={"a": {"cluster": "x"}}))
    with pytest.raises(KubeconfigError) as e:
        resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    text = _one_line(e)
    assert "no current context" in text and "--context" in text and "available: a" in text


def test_error_context_names_an_undefined_cluster(tmp_path: Path, home: Path, no_sa: Path) -> None:
    cfg = write(tmp_path / "c", kubeconfig(contexts={"a": {"cluster": "gone"}}, current="a"))
    with pytest.raises(KubeconfigError) as e:
        resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    assert 'names cluster "gone", which no kubeconfig defines' in _one_line(e)


def test_error_cluster_without_server(tmp_path: Path, home: Path, no_sa: Path) -> None:
    cfg = write(
        tmp_path / "c",
        kubeconfig(clusters={"x": {}}, contexts={"a": {"cluster": "x"}}, current="a"),
    )
    with pytest.raises(KubeconfigError) as e:
        resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    assert 'cluster "x" has no server' in _one_line(e)


def test_error_malformed_yaml_names_file_and_line(tmp_path: Path, home: Path, no_sa: Path) -> None:
    cfg = write(
        tmp_path / "broken",
        "apiVersion: v1\nclusters:\n- name: c\n  cluster:\n    server: [https://x\ncontexts: []\n",
    )
    with pytest.raises(KubeconfigError) as e:
        resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    text = _one_line(e)
    assert f"kubeconfig {cfg}, line " in text
    assert "invalid YAML" in text


def test_error_not_a_mapping(tmp_path: Path, home: Path, no_sa: Path) -> None:
    cfg = write(tmp_path / "list", "- a\n- b\n")
    with pytest.raises(KubeconfigError, match="is not a kubeconfig"):
        resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)


def test_error_unreadable_file(tmp_path: Path, home: Path, no_sa: Path) -> None:
    d = tmp_path / "a-directory"
    d.mkdir()
    with pytest.raises(KubeconfigError) as e:
        resolve(ConnectOptions(), environ=env(home, str(d)), service_account_dir=no_sa)
    assert "is a directory" in _one_line(e)


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="root reads files whatever their mode"
)
def test_error_permission_denied(tmp_path: Path, home: Path, no_sa: Path) -> None:
    cfg = write(tmp_path / "secret", kubeconfig())
    os.chmod(cfg, 0)
    try:
        with pytest.raises(KubeconfigError, match="permission denied"):
            resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    finally:
        os.chmod(cfg, stat.S_IRUSR | stat.S_IWUSR)


def test_error_duplicate_name_in_one_file(tmp_path: Path, home: Path, no_sa: Path) -> None:
    doc = kubeconfig(contexts={"a": {"cluster": "x"}}, current="a")
    doc["contexts"].append({"name": "a", "context": {"cluster": "y"}})
    cfg = write(tmp_path / "dup", doc)
    with pytest.raises(KubeconfigError, match='contexts has "a" twice'):
        resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)


# --- connecting ------------------------------------------------------------------------------


async def test_connects_with_token_and_never_writes_the_kubeconfig(
    tmp_path: Path, home: Path, no_sa: Path, api_server: Recorder
) -> None:
    cfg = write(
        tmp_path / "c" / "config",
        kubeconfig(
            clusters={"local": {"server": api_server.url}},
            users={"me": {"tokenFile": "token"}},
            contexts={"local": {"cluster": "local", "user": "me", "namespace": "shop"}},
            current="local",
        ),
    )
    (tmp_path / "c" / "token").write_text("file-token", encoding="utf-8")
    before = _snapshot(cfg)
    t = resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    async with await t.api_client() as api:
        pods = await CoreV1Api(api).list_namespaced_pod(t.namespace, _preload_content=False)
        assert pods.status == 200
    assert [(r.path, r.authorization) for r in api_server.requests] == [
        ("/api/v1/namespaces/shop/pods", "Bearer file-token")
    ]
    assert _snapshot(cfg) == before


def _plugin_config(d: Path, server: str, script: str, **exec_extra: Any) -> str:
    plugin = d / "bin" / "cred"
    write(plugin, "#!/bin/sh\n" + script)
    plugin.chmod(0o755)
    return write(
        d / "config",
        kubeconfig(
            clusters={"local": {"server": server}},
            users={
                "me": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "bin/cred",
                        "interactiveMode": "Never",
                        **exec_extra,
                    }
                }
            },
            contexts={"local": {"cluster": "local", "user": "me"}},
            current="local",
        ),
    )


async def test_exec_credential_plugin_relative_to_its_file(
    tmp_path: Path, home: Path, no_sa: Path, api_server: Recorder
) -> None:
    # the token is made of the plugin's args and env, and only when the exec info is there
    script = (
        'case "$KUBERNETES_EXEC_INFO" in *ExecCredential*) ;; *) exit 3;; esac\n'
        'printf \'{"apiVersion": "client.authentication.k8s.io/v1", '
        '"kind": "ExecCredential", "status": {"token": "%s-%s"}}\\n\' "$1" "$SUFFIX"\n'
    )
    cfg = _plugin_config(
        tmp_path / "c",
        api_server.url,
        script,
        args=["exec"],
        env=[{"name": "SUFFIX", "value": "token"}],
    )
    t = resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    async with await t.api_client() as api:
        await CoreV1Api(api).list_namespaced_pod("default", _preload_content=False)
    assert api_server.requests[0].authorization == "Bearer exec-token"


async def test_exec_credential_plugin_client_certificate(
    tmp_path: Path, home: Path, no_sa: Path
) -> None:
    import trustme

    ca = trustme.CA()
    leaf = ca.issue_cert("me")
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {
            "clientCertificateData": leaf.cert_chain_pems[0].bytes().decode(),
            "clientKeyData": leaf.private_key_pem.bytes().decode(),
        },
    }
    write(tmp_path / "cred.json", json.dumps(credential))
    cfg = _plugin_config(tmp_path / "c", "https://127.0.0.1:9", f"cat {tmp_path / 'cred.json'}\n")
    t = resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    configuration = await t.client_configuration()
    assert _read(configuration.cert_file) == leaf.cert_chain_pems[0].bytes()
    assert _read(configuration.key_file) == leaf.private_key_pem.bytes()


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("echo 'login required' >&2\nexit 4\n", "exited with status 4"),
        ("echo not json\n", "printed no ExecCredential JSON"),
        ('echo \'{"kind": "ExecCredential", "status": {}}\'\n', "neither a token nor"),
    ],
)
async def test_exec_credential_plugin_failures_are_one_line(
    tmp_path: Path, home: Path, no_sa: Path, script: str, expected: str
) -> None:
    cfg = _plugin_config(tmp_path / "c", "https://127.0.0.1:9", script)
    t = resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    with pytest.raises(KubeconfigError) as e:
        await t.client_configuration()
    text = _one_line(e)
    assert text.startswith('user "me": the credential plugin ')
    assert expected in text


async def test_a_hanging_credential_plugin_times_out(
    tmp_path: Path, home: Path, no_sa: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_module, "CREDENTIAL_TIMEOUT", 0.2)
    plugin = tmp_path / "slow"
    # exits on its own soon after, so asyncio's child watcher reaps it
    plugin.write_text("#!/bin/sh\nexec sleep 0.6\n", encoding="utf-8")
    plugin.chmod(0o755)
    cfg = write(
        tmp_path / "config",
        kubeconfig(
            clusters={"c": {"server": "https://127.0.0.1:9"}},
            users={"me": {"exec": {"apiVersion": "v1", "command": "./slow"}}},
            contexts={"c": {"cluster": "c", "user": "me"}},
            current="c",
        ),
    )
    t = resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    with pytest.raises(KubeconfigError) as e:
        await t.client_configuration()
    assert (
        f'user "me": the credential plugin {tmp_path / "slow"} gave no answer within 0.2 s'
        in _one_line(e)
    )


async def test_missing_exec_plugin_is_one_line(tmp_path: Path, home: Path, no_sa: Path) -> None:
    cfg = write(
        tmp_path / "config",
        kubeconfig(
            clusters={"c": {"server": "https://127.0.0.1:9"}},
            users={"me": {"exec": {"apiVersion": "v1", "command": "./no-such-plugin"}}},
            contexts={"c": {"cluster": "c", "user": "me"}},
            current="c",
        ),
    )
    t = resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    with pytest.raises(KubeconfigError) as e:
        await t.client_configuration()
    text = _one_line(e)
    assert 'user "me"' in text and "no-such-plugin" in text


async def test_anonymous_https_context_builds_a_client(
    tmp_path: Path, home: Path, no_sa: Path
) -> None:
    """A context with no user on an https cluster (kubernetes-asyncio alone fails on it)."""
    import trustme

    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.crt"))
    cfg = write(
        tmp_path / "config",
        kubeconfig(
            clusters={"c": {"server": "https://127.0.0.1:9", "certificate-authority": "ca.crt"}},
            contexts={"c": {"cluster": "c", "user": "not-defined-anywhere"}},
            current="c",
        ),
    )
    t = resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    assert t.user is None
    async with await t.api_client() as api:  # built, never dialled
        assert api.configuration.host == "https://127.0.0.1:9"
        assert "BearerToken" not in api.configuration.api_key


async def test_bad_certificate_file_is_one_line(tmp_path: Path, home: Path, no_sa: Path) -> None:
    write(tmp_path / "ca.crt", "not a certificate\n")
    cfg = write(
        tmp_path / "config",
        kubeconfig(
            # never dialled: building the client loads the CA and fails first
            clusters={"c": {"server": "https://127.0.0.1:9", "certificate-authority": "ca.crt"}},
            contexts={"c": {"cluster": "c"}},
            current="c",
        ),
    )
    t = resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    with pytest.raises(KubeconfigError) as e:
        await t.api_client()
    text = _one_line(e)
    assert text.startswith('context "c": cannot load the TLS certificates')
    missing = write(
        tmp_path / "config2",
        kubeconfig(
            clusters={"c": {"server": "https://127.0.0.1:9", "certificate-authority": "gone.crt"}},
            contexts={"c": {"cluster": "c"}},
            current="c",
        ),
    )
    t = resolve(ConnectOptions(), environ=env(home, missing), service_account_dir=no_sa)
    with pytest.raises(KubeconfigError) as e:
        await t.api_client()
    assert "gone.crt" in _one_line(e)


async def test_read_only_target_gives_guarded_clients(
    tmp_path: Path, home: Path, no_sa: Path, api_server: Recorder
) -> None:
    cfg = write(
        tmp_path / "config",
        kubeconfig(
            clusters={"local": {"server": api_server.url}},
            contexts={"local": {"cluster": "local"}},
            current="local",
        ),
    )
    t = resolve(ConnectOptions(read_only=True), environ=env(home, cfg), service_account_dir=no_sa)
    async with await t.api_client() as api, await t.api_client(websocket=True) as ws:
        await CoreV1Api(api).list_namespaced_pod("shop", _preload_content=False)
        with pytest.raises(ReadOnlyViolation):
            await CoreV1Api(api).delete_namespaced_pod("web", "shop")
        with pytest.raises(ReadOnlyViolation):
            await CoreV1Api(ws).connect_get_namespaced_pod_exec("web", "shop", command=["true"])
    assert [r.method for r in api_server.requests] == ["GET"]


# --- against kubectl -------------------------------------------------------------------------

KUBECTL = shutil.which("kubectl")


def _kubectl_view(environ: dict[str, str], *args: str) -> dict[str, Any]:
    assert KUBECTL is not None
    out = subprocess.run(
        [KUBECTL, "config", "view", "--minify", "--raw", "-o", "json", *args],
        env={"PATH": os.environ.get("PATH", ""), **environ},
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    return json.loads(out.stdout)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize("context", [None, "both", "dev"])
def test_merge_agrees_with_kubectl(
    home: Path, no_sa: Path, two_files: tuple[str, str], context: str | None
) -> None:
    a, b = two_files
    e = env(home, a, b)
    args = ("--context", context) if context else ()
    view = _kubectl_view(e, *args)
    t = resolve(ConnectOptions(context=context), environ=e, service_account_dir=no_sa)
    assert view["current-context"] == t.context
    assert view["clusters"][0]["cluster"]["server"] == t.server
    assert t.kubeconfig is not None
    assert view["users"][0]["user"].get("token") == t.kubeconfig["users"][0]["user"]["token"]
    assert view["contexts"][0]["context"].get("namespace", "default") == t.namespace


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_current_context_agrees_with_kubectl(tmp_path: Path, home: Path, no_sa: Path) -> None:
    # not "x"/"y": YAML 1.1, as kubectl reads it, takes a bare y for a boolean
    contexts = {n: {"cluster": "c"} for n in ("blue", "green")}
    clusters = {"c": {"server": "https://c.example"}}
    unset = write(tmp_path / "0", kubeconfig(clusters=clusters, contexts=contexts))
    blue = write(tmp_path / "1", kubeconfig(current="blue"))
    green = write(tmp_path / "2", kubeconfig(current="green"))
    for files in ((unset, blue, green), (unset, green, blue), (green, unset, blue)):
        e = env(home, *files)
        assert _kubectl_view(e)["current-context"] == (
            resolve(ConnectOptions(), environ=e, service_account_dir=no_sa).context
        )


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_relative_paths_agree_with_kubectl(
    tmp_path: Path, home: Path, no_sa: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--flatten` makes kubectl read each referenced file: the same files as ours."""
    d = tmp_path / "cfg"
    for name in ("ca.crt", "u.crt", "u.key"):
        write(d / "pki" / name, f"beside the kubeconfig: {name}\n")
        # a decoy where a resolution against the working directory would look
        write(tmp_path / "pki" / name, "wrong\n")
    cfg = write(
        d / "config",
        kubeconfig(
            clusters={"c": {"server": "https://c.example", "certificate-authority": "pki/ca.crt"}},
            users={"u": {"client-certificate": "pki/u.crt", "client-key": "pki/u.key"}},
            contexts={"ctx": {"cluster": "c", "user": "u"}},
            current="ctx",
        ),
    )
    monkeypatch.chdir(tmp_path)
    view = _kubectl_view(env(home, cfg), "--flatten")
    t = resolve(ConnectOptions(), environ=env(home, cfg), service_account_dir=no_sa)
    assert t.kubeconfig is not None
    ours = {
        "certificate-authority": t.kubeconfig["clusters"][0]["cluster"]["certificate-authority"],
        "client-certificate": t.kubeconfig["users"][0]["user"]["client-certificate"],
        "client-key": t.kubeconfig["users"][0]["user"]["client-key"],
    }
    theirs = {
        "certificate-authority": view["clusters"][0]["cluster"]["certificate-authority-data"],
        "client-certificate": view["users"][0]["user"]["client-certificate-data"],
        "client-key": view["users"][0]["user"]["client-key-data"],
    }
    for key, path in ours.items():
        assert base64.b64decode(theirs[key]) == Path(path).read_bytes(), key
        assert b"beside the kubeconfig" in Path(path).read_bytes()
