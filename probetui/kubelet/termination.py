"""Stop a pod's sidecars in termination order: each waits for its turn (`waitForTurn`).

In a whole-pod kill and in the pod's teardown, `killContainersWithSyncResult` stops every running
container at once but the sidecars: `newTerminationOrdering` makes each wait until the regular
containers and the sidecars after it in spec order have exited, at most its grace period, and
then sends it SIGTERM with what is left of that grace period, whole seconds taken off
(`killContainer`). `TerminationTurns` holds those waits for one pod; `PodKubelet` tells it of
every exit (`containerTerminated`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from probetui.kubelet import kuberuntime as kr
from probetui.kubelet.instance import Instance
from probetui.prober.clock import Cancellable, Clock
from probetui.spec.model import Pod

# sends the instance SIGTERM, SIGKILL after the grace period given in seconds
Kill = Callable[[Instance, float], None]


class TerminationTurns:
    """Holds the sidecars waiting for their turn to stop, and stop each when its turn comes."""

    def __init__(self, clock: Clock, instances: Mapping[str, Instance], kill: Kill) -> None:
        self.clock = clock
        self.instances = instances
        self.kill = kill
        # each sidecar still waiting: the time its wait began, its grace period, its deadline
        self._turns: dict[str, tuple[float, int, Cancellable]] = {}
        # each sidecar's prerequisites in the current termination order
        self._ordering: dict[str, tuple[str, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self._turns)

    def order(self, pod: Pod) -> None:
        """Take the termination order of the containers running now (`newTerminationOrdering`)."""
        if any(c.is_restartable_init for c in pod.init_containers):
            running = frozenset(i.spec.name for i in self.instances.values() if i.running)
            self._ordering = kr.termination_prereqs(pod, running)

    def waits_for(self, name: str) -> list[str]:
        """Name the running containers that `name` waits for before its SIGTERM."""
        return [n for n in self._ordering.get(name, ()) if self.instances[n].running]

    def wait(self, name: str, grace: int) -> None:
        """Start `name`'s `waitForTurn`: until its prerequisites exit, at most `grace` s."""
        now = self.clock.now()
        timer = self.clock.call_at(now + grace, lambda: self._take_turn(name))
        self._turns[name] = (now, grace, timer)

    def exited(self) -> None:
        """`containerTerminated`: an exit may be the last one a waiting sidecar waits for."""
        for name in list(self._turns):
            if not self.instances[name].running:
                _, _, timer = self._turns.pop(name)
                timer.cancel()  # it exited by itself while it waited
            elif self._turn_has_come(name):
                self._take_turn(name)

    def _turn_has_come(self, name: str) -> bool:
        return not any(self.instances[n].running for n in self._ordering.get(name, ()))

    def _take_turn(self, name: str) -> None:
        """End a sidecar's `waitForTurn`: its prerequisites exited, or its grace period ran out.

        It is stopped with the grace left, whole seconds taken off (`killContainer`).
        """
        turn = self._turns.pop(name, None)
        if turn is None:
            return
        began, grace, timer = turn
        timer.cancel()
        inst = self.instances[name]
        if not inst.running:
            return
        self.kill(inst, kr.grace_after_turn(grace, self.clock.now() - began))


__all__ = ["Kill", "TerminationTurns"]
