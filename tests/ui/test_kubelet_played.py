"""Which kubelet release a pod's probes are played as, in the Threshold state pane's title:
the words (`describe.kubelet_played`) and the pane that shows them (Pilot)."""

from __future__ import annotations

from datetime import UTC

from probetui.keys import ContainerKey
from probetui.runtime.base import NodeKubelet
from probetui.spec.model import Pod
from probetui.timeline.store import Store
from probetui.ui.app import ProbeApp
from probetui.ui.describe import kubelet_played, threshold_title
from probetui.ui.screens.main import MainScreen
from probetui.ui.widgets.threshold import ThresholdPane
from tests.ui.fakes import T_END, FakeControls, FakeRuntime, build

SIZE = (160, 45)
API = ContainerKey("uid-api", "api")
CRASHY = ContainerKey("uid-crashy", "worker")


def test_the_words_profile_of_node() -> None:
    """The node's kubeletVersion where known (`profile_of_node`: the nearest modelled release
    for one outside 1.33-1.38, its own version named), else the configured one and why."""
    assert kubelet_played("1.35", NodeKubelet("b", "v1.37.2")) == "kubelet 1.37 (node b)"
    assert kubelet_played("1.35", NodeKubelet("b", "v1.36.1-eks-3f2e1a")) == (
        "kubelet 1.36 (node b)"
    )
    assert kubelet_played("1.35", NodeKubelet("a", "v1.31.2")) == (
        "kubelet 1.33 (node a runs v1.31.2)"
    )
    assert kubelet_played("1.37", NodeKubelet("", None, "nodes not read in read-only mode")) == (
        "kubelet 1.37 (configured: nodes not read in read-only mode)"
    )
    assert kubelet_played("1.36", NodeKubelet("a", "garbage", "")) == "kubelet 1.36 (configured)"
    assert kubelet_played("1.35", NodeKubelet()) == "kubelet 1.35 (configured)"
    assert threshold_title(None) == "Threshold state"


class _Nodes(FakeRuntime):
    """A cluster view whose nodes were read: the crashy pod's node runs 1.37, api's is not
    known yet."""

    def __init__(self) -> None:
        super().__init__(observes_kubelet=True)
        self.configured_kubelet = "1.34"

    def node_kubelet(self, pod: Pod) -> NodeKubelet:
        if pod.uid == CRASHY.pod_uid:
            return NodeKubelet("node-b", "v1.37.2")
        return NodeKubelet("node-a", None, "node node-a not read yet")


async def test_the_threshold_pane_names_the_release_played() -> None:
    store = Store()
    build(store)
    app = ProbeApp(FakeControls(_Nodes()), store, now=lambda: T_END, tz=UTC, run_engine=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MainScreen)
        pane = app.query_one(ThresholdPane)
        # the cluster view opens on the worst container: crashy, on node-b
        assert screen.selected == CRASHY
        assert pane.border_title == "Threshold state · kubelet 1.37 (node node-b)"
        screen.workloads.select(API)
        await pilot.pause(0.2)
        assert pane.border_title == (
            "Threshold state · kubelet 1.34 (configured: node node-a not read yet)"
        )
