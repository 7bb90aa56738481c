"""PodStatus's container lookups: by name with an ID (what a worker reads), by name whatever the
ID (what the UI shows), and by container ID (which container a result is about)."""

from probetui.prober.status import ContainerStatus, PodStatus

STATUS = PodStatus(
    container_statuses=(
        ContainerStatus("app", container_id="containerd://a2"),
        ContainerStatus("pending"),
    ),
    init_container_statuses=(
        ContainerStatus("migrate", container_id="containerd://m1"),
        ContainerStatus("pending", container_id="containerd://p0"),
    ),
)


def test_find_skips_statuses_without_an_id() -> None:
    assert STATUS.find("app") is STATUS.container_statuses[0]
    assert STATUS.find("pending") is STATUS.init_container_statuses[1]
    assert STATUS.find("gone") is None


def test_lookup_takes_the_first_of_the_name() -> None:
    assert STATUS.lookup("pending") is STATUS.container_statuses[1]
    assert STATUS.lookup("migrate") is STATUS.init_container_statuses[0]
    assert STATUS.lookup("gone") is None


def test_by_container_id_looks_in_both_groups() -> None:
    assert STATUS.by_container_id("containerd://a2") is STATUS.container_statuses[0]
    assert STATUS.by_container_id("containerd://m1") is STATUS.init_container_statuses[0]
    assert STATUS.by_container_id("containerd://zz") is None
