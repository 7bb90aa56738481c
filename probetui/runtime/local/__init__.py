"""The local runtime: a Pod manifest's containers run as local processes.

`runtime` is `LocalRuntime`, which gives each pod a `PodKubelet` (`probetui.kubelet.pod`) over
`backend`, the pod's containers as process groups. `process` supervises one container instance:
start, wait, stop with a grace period, output tail, and the registry that makes sure no child
outlives probetui.
"""
