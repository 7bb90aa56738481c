"""The probe shown first for a container is the one doing it harm, and the attempt that
triggers a kill says the run that reached the threshold (docs/screen.md, Threshold state)."""

from __future__ import annotations

from probetui.keys import ContainerKey
from probetui.probe.base import Result
from probetui.spec.model import Container, Pod
from probetui.ui.screens.main import MainScreen, harmful_probe
from probetui.ui.widgets.attempts import AttemptLog
from probetui.ui.widgets.timeline import Timeline
from tests.timeline.synth import Synth
from tests.ui.fakes import T_END, L, R, S, http, make_app

SIZE = (160, 45)
WARMUP = ContainerKey("uid-warmup", "app")
LAGGING = ContainerKey("uid-lagging", "app")
API = ContainerKey("uid-api", "api")


def warm_up_pod(s: Synth) -> None:
    """The user's pod: a 20 s warm-up, readiness failing through it, liveness 3 x 3 s killing
    the container before it is warm."""
    pod = s.add_pod(
        Pod(
            name="warmup",
            namespace="demo",
            uid=WARMUP.pod_uid,
            containers=(
                Container(
                    name="app",
                    readiness_probe=http(18200, "/ready", period_seconds=2),
                    liveness_probe=http(18200, "/healthz", period_seconds=3, failure_threshold=3),
                ),
            ),
        ),
        T_END - 30,
    )
    s.start(pod, "app", T_END - 29)
    for i in range(10):
        s.attempt(pod, "app", R, T_END - 28 + 2 * i, Result.FAILURE)
    for i in range(3):
        s.attempt(pod, "app", L, T_END - 27 + 3 * i, Result.FAILURE)
    s.kubelet(
        pod,
        "app",
        "Killing",
        T_END - 20.5,
        probe="liveness",
        message="Container app failed liveness probe, will be restarted",
    )


def lagging_pod(s: Synth) -> None:
    """Readiness failing (published Failure), liveness passing: nothing killed."""
    pod = s.add_pod(
        Pod(
            name="lagging",
            namespace="demo",
            uid=LAGGING.pod_uid,
            containers=(
                Container(
                    name="app",
                    readiness_probe=http(18201, "/ready", period_seconds=2),
                    liveness_probe=http(18201, "/healthz", period_seconds=3),
                ),
            ),
        ),
        T_END - 30,
    )
    s.start(pod, "app", T_END - 29)
    for i in range(5):
        s.attempt(pod, "app", R, T_END - 20 + 2 * i, Result.FAILURE)
        s.attempt(pod, "app", L, T_END - 20 + 3 * i)


def screen(app) -> MainScreen:  # type: ignore[no-untyped-def]
    assert isinstance(app.screen, MainScreen)
    return app.screen


async def test_a_probe_that_killed_is_shown_before_a_failing_readiness() -> None:
    app, store, _ = make_app()
    s = Synth(store)
    warm_up_pod(s)
    lagging_pod(s)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = screen(app)
        assert main.selected == API and main.probe is R  # nothing harms api: readiness first
        main.workloads.select(WARMUP)
        await pilot.pause()
        assert main.probe is L
        assert app.query_one(Timeline).render().plain.splitlines()[3].startswith("▶liveness")
        assert app.query_one(AttemptLog).border_title == "Attempts · liveness"
        # on a container nothing harms the probe shown stays (it has one of that type) ...
        main.workloads.select(API)
        await pilot.pause()
        assert main.probe is L
        main.workloads.select(ContainerKey("uid-web", "web"))
        await pilot.pause()
        assert main.probe is L
        # ... and a failing readiness comes before it
        main.workloads.select(LAGGING)
        await pilot.pause()
        assert main.probe is R
        # a re-announcement of the same container keeps what p chose there
        await pilot.press("p")
        assert main.probe is L
        main.workloads.rebuild()
        await pilot.pause()
        assert main.probe is L


def test_the_order_of_harm() -> None:
    """Killed (the latest kill first, a held Failure counts as killing now) before a failing
    readiness, before a liveness or startup run of failures short of the threshold."""
    _, store, _ = make_app()
    s = Synth(store)
    warm_up_pod(s)
    lagging_pod(s)
    spec = store.pods

    def harm(key: ContainerKey):  # type: ignore[no-untyped-def]
        return harmful_probe(spec[key.pod_uid].pod.container(key.container), store.containers[key])

    assert harm(WARMUP) is L
    assert harm(LAGGING) is R
    assert harm(API) is None
    assert harm(ContainerKey("uid-crashy", "worker")) is L
    assert harm(ContainerKey("uid-slow", "app")) is None  # its startup probe passed long ago
    # a startup probe that killed, later than liveness's kill
    pod = s.add_pod(
        Pod(
            name="slow-kill",
            namespace="demo",
            uid="uid-slow-kill",
            containers=(
                Container(
                    name="app",
                    startup_probe=http(18202, "/started", period_seconds=1, failure_threshold=2),
                    readiness_probe=http(18202, "/ready", period_seconds=2),
                    liveness_probe=http(18202, "/healthz", period_seconds=3),
                ),
            ),
        ),
        T_END - 60,
    )
    s.start(pod, "app", T_END - 59)
    s.kubelet(pod, "app", "Killing", T_END - 50, probe="liveness", message="")
    s.attempt(pod, "app", R, T_END - 40, Result.FAILURE)
    s.kubelet(pod, "app", "Killing", T_END - 30, probe="startup", message="")
    assert harm(ContainerKey("uid-slow-kill", "app")) is S


async def test_the_attempt_that_triggers_a_kill_says_the_run_that_reached_the_threshold() -> None:
    # the worker zeroes its run as it holds for the kill (worker.go doProbe); the record
    # carries that 0, the JSON's resultRun too: the screen says the count the kubelet reached
    app, store, _ = make_app()
    warm_up_pod(Synth(store))
    async with app.run_test(size=SIZE) as pilot:
        main = screen(app)
        main.workloads.select(WARMUP)
        await pilot.pause()
        while main.probe is not L:
            await pilot.press("p")
        await pilot.press("enter")
        await pilot.pause()
        lines = app.query_one(AttemptLog).render().plain.splitlines()
        runs = [line.split("·")[-2].strip() for line in lines[1:7:2]]
        assert runs == ["run 3 of 3", "run 2 of 3", "run 1 of 3"], lines[:6]
        # the record keeps the worker's run after the attempt, as JSON's resultRun does
        history = store.containers[WARMUP].probes[L]
        assert history.recent(1)[0].result_run == 0


async def test_the_probe_shown_follows_the_harm_as_it_comes_until_p_chooses() -> None:
    # the first screen is drawn before liveness kills anything: readiness, failing through
    # the warm-up, was shown, and stayed while liveness killed the container
    from datetime import UTC

    from probetui.timeline.store import Store
    from probetui.ui.app import ProbeApp
    from tests.ui.fakes import FakeControls, FakeRuntime

    for choose in (False, True):
        store = Store()
        s = Synth(store)
        pod = s.add_pod(
            Pod(
                name="warmup",
                namespace="demo",
                uid=WARMUP.pod_uid,
                containers=(
                    Container(
                        name="app",
                        readiness_probe=http(18200, "/ready", period_seconds=2),
                        liveness_probe=http(18200, "/", period_seconds=3, failure_threshold=3),
                    ),
                ),
            ),
            T_END - 30,
        )
        s.start(pod, "app", T_END - 29)
        s.attempt(pod, "app", R, T_END - 28, Result.FAILURE)
        app = ProbeApp(
            FakeControls(FakeRuntime()), store, now=lambda: T_END, tz=UTC, run_engine=False
        )
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            main = screen(app)
            assert main.selected == WARMUP and main.probe is R
            if choose:
                await pilot.press("p", "P")  # readiness again, chosen
            for i in range(3):
                s.attempt(pod, "app", L, T_END - 27 + 3 * i, Result.FAILURE)
            s.kubelet(pod, "app", "Killing", T_END - 20.5, probe="liveness", message="")
            await pilot.pause(0.25)  # a poll
            assert main.probe is (R if choose else L)
            lanes = app.query_one(Timeline).render_line(3).text
            assert lanes.startswith(" liveness" if choose else "▶liveness")
