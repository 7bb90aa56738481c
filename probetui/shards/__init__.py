"""Run the prober in shard processes, split by pod, streaming to the UI process.

`pool.ShardPool` runs in the UI (or headless) process: it starts N shard processes
(`python -m probetui.shards.child`, spawned, never forked), gives each the pods it owns by a
stable hash of the pod's UID (`placement.py`), feeds every sink it has (the UI's store, the
JSONL writer, the recorder) from their streams (`probetui.stream`), routes the user's commands
to the shard that owns the probe, restarts a shard that dies, and ends them all on the way out.
A pod's probes all live in one shard, so startup gating and the played kubelet hold as in one
process. `live.py` turns `--shards N|auto` into an engine: `auto`, the default, keeps the
engine in the UI's process for few attempts a second and otherwise runs as many shards as pay
off on the cores, saying which and why.

Two ways a shard gets its pods:
- local (`probetui local`, `demo`): the local runtime plays the kubelet, whose kills and
  readiness follow the prober's results as they are published, so a pod's processes run in the
  shard that probes it: the shard runs `LocalRuntime` over its own pods.
- fed (`fed.py`): the source runs once in the parent and each pod snapshot and manager call
  goes to the owning shard, which never reaches the source itself: the cluster view
  (`cluster.py`: one list/watch; the divergence check reads the shards' verdicts,
  `verdicts.py`; exec, port-forward and proxy attempts on the shard's own API clients) and the
  benchmark's synthetic source.
"""
