"""The scenario of `probetui simulate`: bad scenarios name the key in one line; `--set` values
are defaulted and validated as the API server treats a manifest's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from probetui.simulate import ScenarioError, apply_overrides, parse_scenario, simulate
from tests.simulate.fixtures import HTTP, of, pod


@pytest.mark.parametrize(
    ("scenario", "needle"),
    [
        ({"pod": None}, "pod:"),
        ({"pod": pod({}), "app": {"ready_afterr": 3}}, "app.ready_afterr: unknown key"),
        ({"pod": pod({}), "app": {"fail_between": [[5]]}}, "app.fail_between[0]"),
        ({"pod": pod({}), "container": "nope"}, "container: no container 'nope'"),
        ({"pod": pod({}), "duration": "long"}, "duration: expected a number"),
        ({"pod": pod({}), "app": {"probes": {"liveliness": {}}}}, "app.probes.liveliness"),
    ],
)
def test_bad_scenario_names_the_key(scenario: dict[str, Any], needle: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario(scenario)
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def test_bad_override_is_one_line() -> None:
    s = parse_scenario({"pod": pod({"livenessProbe": HTTP})})
    for bad, needle in [
        ("liveness.failureThreshold", "PROBE.FIELD=VALUE"),
        ("liveness.failureThreshhold=3", "unknown field"),
        ("readiness.periodSeconds=3", "no readiness probe"),
        ("liveness.successThreshold=2", "must be 1"),
    ]:
        with pytest.raises(ScenarioError) as e:
            apply_overrides(s, [bad])
        assert needle in str(e.value)


def _probe_after_set(probe: dict[str, Any], item: str) -> Any:
    s = parse_scenario({"pod": pod({"livenessProbe": {**HTTP, **probe}})})
    container = apply_overrides(s, [item]).pod.container("app")
    assert container is not None
    return container.liveness_probe


@pytest.mark.parametrize(
    ("item", "field", "value"),
    [
        ("liveness.failureThreshold=0", "failure_threshold", 3),
        ("liveness.periodSeconds=0", "period_seconds", 10),
        ("liveness.successThreshold=0", "success_threshold", 1),
        ("liveness.timeoutSeconds=0", "timeout_seconds", 1),
        ("liveness.initialDelaySeconds=0", "initial_delay_seconds", 0),
    ],
)
def test_set_zero_takes_set_defaults_probe_value(item: str, field: str, value: int) -> None:
    """SetDefaults_Probe (defaults.go) runs on a --set value as on a manifest's: a 0 timeout,
    period, success or failure threshold is 1, 10, 1, 3; initialDelaySeconds has no default."""
    probe = _probe_after_set(
        {"failureThreshold": 5, "periodSeconds": 7, "timeoutSeconds": 2, "initialDelaySeconds": 4},
        item,
    )
    assert getattr(probe, field) == value


def test_set_failure_threshold_0_kills_after_three_failures_as_the_api_defaults_it() -> None:
    """`failureThreshold=0` is 3 once defaulted: the kill comes at the third failure, not the
    first, exactly as with failureThreshold 3 written out."""
    app = {"fail_between": [[15, 1000]]}
    base = parse_scenario(
        {
            "pod": pod({"livenessProbe": {**HTTP, "periodSeconds": 10, "failureThreshold": 1}}),
            "duration": 60,
            "app": app,
        }
    )
    written = parse_scenario(
        {
            "pod": pod({"livenessProbe": {**HTTP, "periodSeconds": 10, "failureThreshold": 3}}),
            "duration": 60,
            "app": app,
        }
    )
    zero = simulate(apply_overrides(base, ["liveness.failureThreshold=0"]))
    assert [e["t"] for e in of(zero, "Killing")] == [
        e["t"] for e in of(simulate(written), "Killing")
    ]
    assert of(zero, "Killing")[0]["t"] == 40.0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("periodSeconds", -1),
        ("failureThreshold", -3),
        ("initialDelaySeconds", -5),
        ("terminationGracePeriodSeconds", 0),
        ("successThreshold", 2),
    ],
)
def test_set_is_validated_with_the_manifest_messages(field: str, value: int) -> None:
    """validateProbe / validateLivenessProbe on the defaulted --set value, with the very text a
    manifest carrying that value gets ("must be greater than or equal to 0", "must be greater
    than 0", "must be 1")."""
    from probetui.spec.errors import ManifestError
    from probetui.spec.parse import parse_pods

    manifest = pod({"livenessProbe": {**HTTP, field: value}})
    with pytest.raises(ManifestError) as written:
        parse_pods(json.dumps(manifest), source="<scenario> (inline pod)")
    s = parse_scenario({"pod": pod({"livenessProbe": HTTP})})
    with pytest.raises(ScenarioError) as overridden:
        apply_overrides(s, [f"liveness.{field}={value}"])
    # the same words; only the manifest's names a line, as a --set value has none in the file
    assert str(overridden.value) == "--set: " + str(written.value).replace(", line 1:", ":")


EXEC_LIVENESS = {"livenessProbe": {"exec": {"command": ["check"]}}}


@pytest.mark.parametrize(
    ("container", "scenario", "needle"),
    [
        (EXEC_LIVENESS, {"app": {"http": []}}, "app.http: container 'app' has no httpGet probe"),
        (
            {"livenessProbe": HTTP},
            {"app": {"probes": {"liveness": {"exec": []}}}},
            "app.probes.liveness.exec: container 'app' has no exec probe",
        ),
        (
            {"livenessProbe": HTTP},
            {"app": {"http": [{"between": [0, 9], "status": 200, "location": "/x"}]}},
            "app.http[0].location: goes with a 3xx status",
        ),
        ({"livenessProbe": HTTP}, {"app": {"http": [{"between": [0, 9]}]}}, "app.http[0]: needs"),
        (
            {"livenessProbe": HTTP},
            {"app": {"http": [{"between": [0, 9], "status": 99}]}},
            "app.http[0].status: expected an integer 200-599",
        ),
        (
            EXEC_LIVENESS,
            {"app": {"exec": [{"between": [9, 1], "exit_code": 1}]}},
            "app.exec[0].between: end 1 is before start 9",
        ),
        (EXEC_LIVENESS, {"app": {"exits": [{"code": 1}]}}, "app.exits[0].code: unknown key"),
        (EXEC_LIVENESS, {"app": {"pre_stop_seconds": 5}}, "no lifecycle.preStop hook"),
        (EXEC_LIVENESS, {"apps": {"db": {}}}, "apps.db: no container 'db' in pod demo"),
        (EXEC_LIVENESS, {"app": {}, "apps": {"app": {}}}, "apps.app: the scenario's container"),
        (EXEC_LIVENESS, {"deletion": {"grace_period": 3}}, "deletion: needs at"),
        (
            EXEC_LIVENESS,
            {"deletion": {"at": 9, "grace_period": "1500ms"}},
            "deletion.grace_period: whole seconds",
        ),
        (
            EXEC_LIVENESS,
            {"deletion": 60, "kubelet_restarts": [30, 90]},
            "kubelet_restarts[1]: 90 s is not before the deletion",
        ),
        (
            EXEC_LIVENESS,
            {"app": {"start_after": 0.5}, "kubelet_restarts": [30]},
            "kubelet_restarts: a container that starts within the first second",
        ),
        (EXEC_LIVENESS, {"seed": "x"}, "seed: expected an integer"),
    ],
)
def test_bad_script_names_the_key(
    container: dict[str, Any], scenario: dict[str, Any], needle: str
) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario({"pod": pod(container), **scenario})
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def test_every_time_key_takes_seconds_or_a_go_duration() -> None:
    """durations.parse_duration for each new time key, as for the old ones."""
    from probetui.simulate.scenario import Deletion, ExecAnswer, Exit

    container = {**EXEC_LIVENESS, "lifecycle": {"preStop": {"exec": {"command": ["x"]}}}}
    s = parse_scenario(
        {
            "pod": pod(container),
            "app": {
                "exec": [{"between": ["1m", "90s"], "exit_code": 2}],
                "exits": [{"at": "2m30s"}],
                "pre_stop_seconds": "1500ms",
            },
            "deletion": {"at": "5m", "grace_period": "1m"},
            "kubelet_restarts": ["1m", 30],
        }
    )
    assert s.app.default.exec == (ExecAnswer(60.0, 90.0, 2, ""),)
    assert s.app.exits == (Exit(150.0, 1),)
    assert s.app.pre_stop_seconds == 1.5
    assert s.deletion == Deletion(300.0, 60)
    assert s.kubelet_restarts == (30.0, 60.0)


def test_apps_entry_for_the_scenario_container_is_its_app() -> None:
    """`apps.<container>` beside no `app` scripts the scenario's container itself."""
    s = parse_scenario({"pod": pod(EXEC_LIVENESS), "apps": {"app": {"exit_after": 9}}})
    assert s.app.exit_after == 9.0 and s.apps == {}
