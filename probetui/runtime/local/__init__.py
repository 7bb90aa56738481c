"""The local runtime runs a Pod manifest's containers as local processes.

`runtime` is `LocalRuntime`, which gives each pod a `PodKubelet` (`probetui.kubelet.pod`) over
`backend`, the pod's containers as process groups. `process` supervises one container instance:
start, wait, stop with a grace period; `procspec` is what it runs (argv, env, working directory
from the manifest), `output` the tail of its output, `groups` the registry that kills every
child group on the endings probetui can catch. `supervisor` is the small process each container
runs under, so that everything the container starts dies with it, and with probetui however
probetui dies (`kill -9`, the OOM killer), and `launch` probetui's side of it; `execs` has it run the container's exec probe
attempts, which end with the container too.
"""
