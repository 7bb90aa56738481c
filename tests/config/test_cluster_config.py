"""The cluster view under configuration, against the API emulator: a context rule turns
read-only on with no flag, a locked shell stays read-only whatever the files say, and the
emulator's request log shows only get, list and watch. Context defaults reach the run, and a
context's `via` and `kubeletVersion` reach the probes themselves."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from probetui.cli import main
from tests.cli.test_cluster import _PROXY_VARS, _play_the_kubelet, _pod, run_probetui
from tests.config.helpers import system_file, user_file, write
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod
from tests.kube.emulator.fixtures import HttpTarget, api, http_target

__all__ = ["api", "http_target"]  # fixtures, used by name

HEADLESS = ("--no-ui", "--output", "jsonl", "--duration", "2.5")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (*_PROXY_VARS, "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "POD_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def _only_reads(api: ApiEmulator, http_target: HttpTarget) -> None:
    assert api.non_read_requests() == []
    for sub in ("exec", "portforward", "proxy"):
        assert api.count_requests(subresource=sub) == 0
    assert {r.method for r in api.requests} == {"GET"}
    assert http_target.seen == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("files", "env", "reason"),
    [
        ({"contexts": {"emu*": {"readOnly": True}}}, {}, "context rule emu*"),
        (
            {"readOnly": False, "contexts": {"*": {"readOnly": False}}},
            {"PROBETUI_READ_ONLY": "locked"},
            "locked by PROBETUI_READ_ONLY",
        ),
    ],
    ids=["context-rule", "locked-environment"],
)
async def test_read_only_from_configuration_sends_only_get_list_watch(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, object],
    env: dict[str, str],
    reason: str,
) -> None:
    write(user_file(), files)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    api.role = "view"
    api.add_pod(_pod(http_target.port))
    api.map_port("web", http_target.port, http_target.port)
    config = api.kubeconfig(tmp_path / "kubeconfig", namespace="default")
    run = asyncio.create_task(run_probetui(*HEADLESS, "--kubeconfig", str(config)))
    await _play_the_kubelet(api)
    code, lines, err = await run
    assert code == 0, err
    _only_reads(api, http_target)
    assert not [x for x in lines if x["type"] == "ProbeAttempt"]
    assert f"read-only ({reason})" in err
    assert {"ReadyChanged", "Unhealthy"} <= {x["type"] for x in lines}


def test_a_locked_shell_refuses_write_before_connecting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PROBETUI_READ_ONLY", "locked")
    write(user_file(), {"readOnly": False})
    assert main(["--write", "--no-ui"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("probetui: error: --write: read-only is locked by PROBETUI_READ_ONLY")
    assert "\n" not in err


@pytest.mark.slow
async def test_a_context_s_via_and_kubelet_version_reach_the_probes(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """No flag: the file's `via: direct` probes the pod IP (no port-forward asked for), and its
    `kubeletVersion` names the probes where the nodes cannot be read (the view role)."""
    write(user_file(), {"contexts": {"emu*": {"via": "direct", "kubeletVersion": "1.31"}}})
    api.role = "view"
    readiness = http_get_probe("/ready", http_target.port, period=1)
    api.add_pod(make_pod("web", containers=[container("app", readiness=readiness)]))
    config = api.kubeconfig(tmp_path / "kubeconfig", namespace="default")
    code, lines, err = await run_probetui(*HEADLESS, "--kubeconfig", str(config))
    assert code == 0, err
    attempts = [x for x in lines if x["type"] == "ProbeAttempt"]
    assert attempts and {x["via"] for x in attempts} == {"direct"}
    assert {h["User-Agent"] for _, _, h in http_target.seen} == {"kube-probe/1.31"}
    assert api.count_requests(subresource="portforward") == 0


def test_context_defaults_reach_the_target(tmp_path: Path) -> None:
    from argparse import Namespace

    from probetui.cli.cluster import configured_target
    from probetui.config import load
    from probetui.runtime.kubernetes.config import ConnectOptions, resolve

    kubeconfig = tmp_path / "kubeconfig"
    context = {"cluster": "c", "user": "u", "namespace": "from-kubeconfig"}
    write(
        kubeconfig,
        {
            "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "emulator", "context": context}],
            "current-context": "emulator",
        },
    )
    write(
        user_file(),
        {
            "contexts": {
                "emulator": {"namespace": "payments", "selector": "app=web", "via": "direct"},
                "*": {"kubeletVersion": "1.31", "readOnly": True},
            }
        },
    )
    flags = {
        "k8s_via": None,
        "k8s_namespace": None,
        "k8s_selector": None,
        "k8s_kubelet_version": None,
        "k8s_read_only": False,
        "k8s_write": False,
    }
    target = resolve(ConnectOptions(kubeconfig=str(kubeconfig)))
    configured, settings = configured_target(load(), target, Namespace(**flags))
    assert (configured.namespace, configured.selector, configured.read_only) == (
        "payments",
        "app=web",
        True,
    )
    assert configured.namespace_from.startswith("user file ")
    assert settings["via"].value == "direct" and settings["kubelet_version"].value == "1.31"
    assert settings["read_only"].reason == "context rule *"
    # flags win over every rule
    flags.update(k8s_namespace="ns", k8s_selector="a=b", k8s_via="proxy", k8s_write=True)
    target = resolve(ConnectOptions(kubeconfig=str(kubeconfig), namespace="ns", selector="a=b"))
    configured, settings = configured_target(load(), target, Namespace(**flags))
    assert (configured.namespace, configured.selector, configured.read_only) == ("ns", "a=b", False)
    assert configured.namespace_from == "--namespace" and settings["via"].value == "proxy"


# --- a system lock holds for a cluster, whatever its context is called ------------------------

LOCK_PROD = {"lock": True, "contexts": {"prod-*": {"readOnly": True}}}


@pytest.mark.slow
async def test_a_renamed_context_of_a_locked_cluster_sends_only_get_list_watch(
    tmp_path: Path, http_target: HttpTarget
) -> None:
    """The system file locks prod-*; the same cluster, with the same token, under a context
    called dev-laptop (its server spelled localhost, its CA a file of the same certificate)
    is locked too: no pods/exec, no pods/portforward."""
    write(system_file(), LOCK_PROD)
    async with ApiEmulator(tls=True) as emulator:
        emulator.role = "view"
        emulator.add_pod(_pod(http_target.port))
        emulator.map_port("web", http_target.port, http_target.port)
        doc = emulator.kubeconfig_dict(context="prod-eu", cluster="prod", namespace="default")
        assert emulator.ca_file is not None
        ca_copy = tmp_path / "laptop-ca.crt"
        ca_copy.write_bytes(emulator.ca_file.read_bytes())
        doc["clusters"].append(
            {
                "name": "laptop",
                "cluster": {
                    "server": f"https://localhost:{emulator.port}",
                    "certificate-authority": str(ca_copy),
                },
            }
        )
        doc["contexts"].append(
            {
                "name": "dev-laptop",
                "context": {"cluster": "laptop", "user": "emulator-user", "namespace": "default"},
            }
        )
        config = tmp_path / "kubeconfig"
        write(config, doc)
        run = asyncio.create_task(
            run_probetui(
                *HEADLESS,
                "--via",
                "port-forward",
                "--context",
                "dev-laptop",
                "--kubeconfig",
                str(config),
            )
        )
        await _play_the_kubelet(emulator)
        code, lines, err = await run
        assert code == 0, err
        _only_reads(emulator, http_target)
        assert "locked: system context rule prod-* (the cluster of prod-eu)" in err
        assert {"ReadyChanged", "Unhealthy"} <= {x["type"] for x in lines}


def _locked(tmp_path: Path, context: str) -> bool:
    from argparse import Namespace

    from probetui.cli.cluster import configured_target
    from probetui.config import load
    from probetui.runtime.kubernetes.config import ConnectOptions, resolve

    flags = {
        "k8s_via": None,
        "k8s_namespace": None,
        "k8s_selector": None,
        "k8s_kubelet_version": None,
        "k8s_read_only": False,
        "k8s_write": False,
    }
    options = ConnectOptions(kubeconfig=str(tmp_path / "kubeconfig"), context=context)
    target = resolve(options, environ={"HOME": str(tmp_path)})
    configured, settings = configured_target(load(), target, Namespace(**flags))
    assert configured.read_only is settings["read_only"].locked
    return bool(settings["read_only"].locked)


def test_which_contexts_a_system_lock_holds(tmp_path: Path) -> None:
    import base64

    import trustme

    prod_ca, other_ca = trustme.CA().cert_pem.bytes(), trustme.CA().cert_pem.bytes()
    (tmp_path / "prod-ca.crt").write_bytes(prod_ca)

    def cluster(server: str, ca: bytes | None = None) -> dict[str, object]:
        entry: dict[str, object] = {"server": server}
        if ca is not None:
            entry["certificate-authority-data"] = base64.b64encode(ca).decode()
        return entry

    clusters = {
        "prod": cluster("https://10.0.0.1:6443", prod_ca),
        # the same CA, read from a file, the server spelled by name
        "prod-by-name": {
            "server": "https://kube.prod:6443",
            "certificate-authority": "prod-ca.crt",
        },
        # the same address, another CA
        "prod-other-ca": cluster("https://10.0.0.1:6443/", other_ca),
        "kind": cluster("https://127.0.0.1:40000", other_ca),
        "roots": cluster("https://kube.example:443"),
    }
    clusters["insecure"] = cluster("https://10.9.9.9:6443")
    clusters["insecure"]["insecure-skip-tls-verify"] = True
    contexts = {
        "prod-eu": "prod",
        "dev-laptop": "prod",
        "by-name": "prod-by-name",
        "other-ca": "prod-other-ca",
        "kind-kind": "kind",
        "roots": "roots",
        "insecure": "insecure",
    }
    doc = {
        "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [
            {"name": n, "context": {"cluster": c, "user": "u"}} for n, c in contexts.items()
        ],
        "current-context": "prod-eu",
    }
    write(tmp_path / "kubeconfig", doc)
    write(system_file(), LOCK_PROD)
    locked = {name: _locked(tmp_path, name) for name in contexts}
    assert locked == {
        "prod-eu": True,  # by name
        "dev-laptop": True,  # the same cluster entry
        "by-name": True,  # the same CA
        "other-ca": True,  # the same server address
        "kind-kind": False,  # a cluster of its own, with a CA of its own
        "roots": True,  # no CA of its own: cannot be told from prod
        "insecure": True,
    }
    # without the locked context in the kubeconfig nothing is known of prod's cluster: only
    # the clusters without a CA stay locked
    doc["contexts"] = [c for c in doc["contexts"] if c["name"] != "prod-eu"]
    doc["current-context"] = "dev-laptop"
    write(tmp_path / "kubeconfig", doc)
    assert not _locked(tmp_path, "dev-laptop")
    assert _locked(tmp_path, "roots")


def test_a_context_may_name_the_agents_and_auto_as_its_via(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from probetui.config.schema import Expected, check_via

    assert check_via("agent") == "agent" and check_via("auto") == "auto"
    with pytest.raises(Expected, match="agent or auto"):
        check_via("agents")
    # the cluster view's flags, refused before another command as its others are
    assert main(["--via", "agent", "--agent-namespace", "w", "check", "--tcp", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "--via, --agent-namespace before 'check' belong to the cluster view" in err
