"""probetui's benchmarks: each one command, printing a table and writing JSON.

- `python -m benchmarks.engine`: the real prober (manager, workers, results caches, handlers)
  driving N synthetic pods against a loopback target; attempts/s, tick lateness, missed ticks,
  CPU per 1,000 attempts, peak RSS, errors. See `benchmarks/engine.py`.
- `python -m benchmarks.blackbox`: the same target probed by prometheus-blackbox-exporter (its
  setup installs the Debian package when missing) and by probetui's engine at the same rate;
  CPU per 1,000 probes of each and the ratio, for HTTP and TCP.
- `python -m benchmarks.history`: bytes per stored attempt and process RSS for N workers with
  an hour of history in the timeline store.
- `python -m benchmarks.ui`: 1,000 containers x 3 probes at period 1 s through the real app
  (headless) and engine: key press to repaint p50/p99, frames per second under the flood.
- `python -m benchmarks.simulate`: virtual seconds per wall second for one pod over 24 h.
- `python -m benchmarks.lint`: `probetui lint` over a generated 10,000-object corpus, and each
  simulated rule's evidence in milliseconds per object.
- `python -m benchmarks.record`: what `--record` costs the engine at 1,500 attempts/s, and
  bytes on disk per attempt with the 24 h x 15,000-probe projection.
- `python -m benchmarks.replay`: the replay screen's first screen, seeks and a 100x playing tick
  on a 15,000-probe recording, and the counterfactual over 24 h of one pod.
- `python -m benchmarks.replay_keys`: the real replay screen on that recording, playing at
  100x while `j`/`k` are pressed: key press to repaint p50/p99 and the speed playing reaches.
- `python -m benchmarks.shards`: the prober in 1, 2, 4 shard processes beside the in-process
  engine, HTTP and TCP: the largest attempt rate held with p99 tick lateness under 50 ms, and
  CPU per attempt including the stream.
- `python -m benchmarks.triage`: the workload's probe view and one `--summary` tick over 2,000
  pods in 100 Deployments: view p50/p99, summary tick and per workload.
- `python -m benchmarks.supervisor`: what the per-container supervisor of the local runtime
  costs: start latency and CPU against a direct spawn, and its memory per running container.
- `python -m benchmarks.agents`: one node agent (`probetui agent`) for a node of 110 pods with
  three probes each at period 10 s, one reader on its stream: its CPU and RSS (`--mode node`),
  and an hour of its ring: memory per attempt and a late reader's replay (`--mode ring`).
- `python -m benchmarks.target`: the loopback target the benchmarks start when nginx is not
  installed (HTTP and TCP on asyncio, gRPC health on grpcio), in its own process.

The full runs are not part of CI; `tests/benchmarks/` runs each one for a few seconds at a small
N so they cannot rot.
"""
