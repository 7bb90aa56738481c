"""The local runtime: a Pod manifest's containers run as local processes.

`process` supervises one container instance: start, wait, stop with a grace period, output tail,
and the registry that makes sure no child outlives probetui.
"""
