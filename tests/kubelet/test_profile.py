"""Kubelet profiles: the gate defaults of each release (`pkg/features/kube_features.go`), the
kubelet's `--feature-gates` parsing (component-base `featureGate.Set`), and the restart
decisions that change with them (`pkg/api/v1/pod/util.go`, `pkg/kubelet/container/helpers.go`
ShouldContainerBeRestarted, `kuberuntime_manager.go` computePodActions)."""

from __future__ import annotations

import pytest

from probetui.kubelet import backoff as bo
from probetui.kubelet.kuberuntime import (
    container_probe_action,
    created_message,
    restart_after_probe_kill,
    should_restart,
    started_message,
)
from probetui.kubelet.profile import (
    DEFAULT_PROFILE,
    ProfileError,
    default_gates,
    parse_feature_gates,
    parse_version,
    profile_for,
)
from probetui.prober.results import ResultValue
from probetui.spec.model import Container, ExecAction, Pod, Probe, RestartRule

LIVE = Probe(exec=ExecAction(("check",)))


def test_default_profile_is_1_35_with_its_defaults() -> None:
    assert profile_for("1.35") == DEFAULT_PROFILE
    assert DEFAULT_PROFILE.version == "1.35"
    assert DEFAULT_PROFILE.describe() == "kubelet 1.35"


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.33", {"ExecProbeTimeout": True, "KubeletCrashLoopBackOffMax": False}),
        ("1.34", {"ContainerRestartRules": False, "ExecProbeTimeout": True}),
        (
            "1.35",
            {
                "ContainerRestartRules": True,
                "RestartAllContainersOnContainerExits": False,
                "ChangeContainerStatusOnKubeletRestart": False,
                "ExecProbeTimeout": True,
                "KubeletCrashLoopBackOffMax": True,
            },
        ),
        ("1.36", {"RestartAllContainersOnContainerExits": True}),
        ("1.37", {"H2CContainerProbe": False, "GRPCContainerProbeTLS": False}),
    ],
)
def test_gate_defaults_per_release_kube_features_go(version: str, expected: dict) -> None:
    """kube_features.go's versioned specs, read at each release's tag."""
    gates = default_gates(parse_version(version))
    for name, value in expected.items():
        assert gates[name] is value, name
        assert profile_for(version).enabled(name) is value


def test_gates_a_release_does_not_know() -> None:
    """A gate appears with its first versioned entry and goes when the release drops it:
    ExecProbeTimeout is gone in 1.38, the 1.37 probe gates are not in 1.36."""
    assert "ExecProbeTimeout" not in default_gates(38)
    assert "GRPCContainerProbeTLS" not in default_gates(36)
    assert "ContainerRestartRules" not in default_gates(33)
    assert "RestartAllContainersOnContainerExits" not in default_gates(34)


@pytest.mark.parametrize(
    ("text", "minor"),
    [("1.35", 35), ("v1.37.2", 37), ("v1.38.0-beta.0", 38), ("v1.33.13+k3s1", 33), ("1.36.3", 36)],
)
def test_version_spellings(text: str, minor: int) -> None:
    assert parse_version(text) == minor


@pytest.mark.parametrize("text", ["1.32", "1.39", "2.0", "latest", ""])
def test_versions_outside_the_model_are_refused_in_one_line(text: str) -> None:
    with pytest.raises(ProfileError) as e:
        parse_version(text)
    assert "\n" not in str(e.value)


def test_feature_gates_flag_is_parsed_as_the_kubelet_does() -> None:
    """featureGate.Set: comma-separated Name=bool, strconv.ParseBool values, empty parts
    skipped."""
    assert parse_feature_gates("A=true,B=false,,C=1, D = F") == {
        "A": True,
        "B": False,
        "C": True,
        "D": False,
    }
    with pytest.raises(ProfileError, match="missing bool value for A"):
        parse_feature_gates("A")
    with pytest.raises(ProfileError, match="invalid value of A=yes"):
        parse_feature_gates("A=yes")


def test_overrides_and_the_kubelets_refusals() -> None:
    p = profile_for("1.37", {"GRPCContainerProbeTLS": True, "ContainerRestartRules": True})
    assert p.grpc_tls and p.container_restart_rules
    assert p.changed == (("GRPCContainerProbeTLS", True),)
    assert p.describe() == "kubelet 1.37 with GRPCContainerProbeTLS=true"
    with pytest.raises(ProfileError, match=r"unrecognized feature gate in kubelet 1\.36"):
        profile_for("1.36", {"H2CContainerProbe": True})
    with pytest.raises(ProfileError, match="locked to true"):
        profile_for("1.35", {"ExecProbeTimeout": False})
    with pytest.raises(ProfileError, match="not one the kubelet model covers"):
        profile_for("1.35", {"InPlacePodVerticalScaling": True})
    assert not profile_for("1.34", {"ExecProbeTimeout": False}).exec_probe_timeout


# -- restarts -------------------------------------------------------------------------------


def _pod(policy: str, *containers: Container) -> Pod:
    return Pod("p", uid="u", containers=containers, restart_policy=policy)


def test_probe_kill_restart_container_policy_only_with_ContainerRestartRules() -> None:
    """computePodActions: the container-level restartPolicy overrides shouldRestartOnFailure
    for a probe kill only with ContainerRestartRules on (1.35 default; 1.34 alpha off)."""
    c = Container("web", restart_policy="Never", liveness_probe=LIVE)
    p = _pod("Always", c)
    assert restart_after_probe_kill(c, p, profile_for("1.35")) is False
    assert restart_after_probe_kill(c, p, profile_for("1.34")) is True
    assert (
        restart_after_probe_kill(c, p, profile_for("1.34", {"ContainerRestartRules": True}))
        is False
    )
    assert (
        restart_after_probe_kill(c, p, profile_for("1.35", {"ContainerRestartRules": False}))
        is True
    )
    d = container_probe_action(
        c, p, running=True, liveness=ResultValue.FAILURE, startup=None, profile=profile_for("1.34")
    )
    assert d.message == "Container web failed liveness probe, will be restarted"


def test_should_restart_without_ContainerRestartRules_ShouldContainerBeRestarted() -> None:
    """helpers.go ShouldContainerBeRestarted with the gate off: only the pod restartPolicy
    (Never: no; OnFailure: a non-zero exit); the container's policy and rules play no part."""
    rules = (RestartRule("Restart", "In", (0,)),)
    c = Container("c", restart_policy="Never", restart_policy_rules=rules)
    old = profile_for("1.34")
    assert should_restart(c, _pod("Always", c), 1, old) is True
    assert should_restart(c, _pod("OnFailure", c), 0, old) is False
    assert should_restart(c, _pod("OnFailure", c), 3, old) is True
    assert should_restart(c, _pod("Never", c), 0, old) is False
    # ContainerShouldRestart with the gate on: the matching rule restarts it
    assert should_restart(c, _pod("Never", c), 0, profile_for("1.35")) is True


def test_restart_all_containers_action_ContainerShouldRestart() -> None:
    """pod/util.go ContainerShouldRestart: a matching RestartAllContainers rule restarts with
    RestartAllContainersOnContainerExits on (1.36 default) and falls back to the container
    policy with it off (1.35 default)."""
    rules = (RestartRule("RestartAllContainers", "In", (1,)),)
    c = Container("c", restart_policy="Never", restart_policy_rules=rules)
    p = _pod("Never", c)
    assert should_restart(c, p, 1, profile_for("1.35")) is False
    assert should_restart(c, p, 1, profile_for("1.36")) is True
    assert (
        should_restart(c, p, 1, profile_for("1.35", {"RestartAllContainersOnContainerExits": True}))
        is True
    )
    assert should_restart(c, p, 2, profile_for("1.36")) is False


def test_lifecycle_texts_changed_in_1_35_startContainer() -> None:
    """kuberuntime_container.go startContainer: "Container created" / "Container started"
    from 1.35 on, the container's name in the text before."""
    assert created_message("web", profile_for("1.34")) == "Created container: web"
    assert started_message("web", profile_for("1.34")) == "Started container web"
    assert created_message("web", profile_for("1.35")) == "Container created"
    assert started_message("web", profile_for("1.38")) == "Container started"


def test_reduced_back_off_gate_newCrashLoopBackOff() -> None:
    """kubelet.go newCrashLoopBackOff: ReduceDefaultCrashLoopBackOffDecay (alpha, off) makes
    the back-off 1 s up to 60 s."""
    p = profile_for("1.35", {"ReduceDefaultCrashLoopBackOffDecay": True})
    assert p.reduced_backoff and not DEFAULT_PROFILE.reduced_backoff
    b = bo.crash_loop_backoff(reduce_default_decay=p.reduced_backoff)
    assert (b.initial, b.max) == (1.0, 60.0)
