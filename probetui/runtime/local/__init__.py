"""The local runtime: a Pod manifest's containers run as local processes.

`runtime` is `LocalRuntime`, which gives each pod a `PodKubelet` (`probetui.kubelet.pod`) over
`backend`, the pod's containers as process groups. `process` supervises one container instance:
start, wait, stop with a grace period, output tail, and the registry that kills every child on
the endings probetui can catch. `supervisor` is the small process each container runs under, so
that its group dies with probetui however probetui dies (`kill -9`, the OOM killer);
`watchdog` does the same for exec probe attempts, one process per probetui.
"""
