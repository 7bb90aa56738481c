"""Tell which workload is in trouble, and whether on every replica: triage at cluster scale.

`groups` names a pod's workload and sums its replicas up (`Summary`, the fleet, how much a
container needs looking at); `probes` lays one workload's probes out across its replicas
(counts now, latency percentiles against the timeout, the replicas that differ); `report`
writes both as the `WorkloadSummary` JSON line. The Workloads list, the workload's probe view
and `--summary` all read these, so the screen and a script cannot disagree about a workload.
Everything here reads a `timeline.store.Store` and nothing else.
"""
