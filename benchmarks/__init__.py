"""probetui's benchmarks: each one command, printing a table and writing JSON.

- `python -m benchmarks.engine`: the real prober (manager, workers, results caches, handlers)
  driving N synthetic pods against a loopback target; attempts/s, tick lateness, missed ticks,
  CPU per 1,000 attempts, peak RSS, errors. See `benchmarks/engine.py`.
- `python -m benchmarks.target`: the loopback target the benchmarks start when nginx is not
  installed (HTTP and TCP on asyncio, gRPC health on grpcio), in its own process.

The full runs are not part of CI; `tests/benchmarks/` runs each one for a few seconds at a small
N so they cannot rot.
"""
