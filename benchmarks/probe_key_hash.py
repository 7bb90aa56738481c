"""Micro-benchmark: a dict lookup by `ProbeKey`, as the store and the prober make them, with
`ProbeType` hashed by identity (its override) and by Enum's own hash.

    python -m benchmarks.probe_key_hash [--probes 15000] [--repeat 15] [--json [PATH]]

A `ProbeKey` is a tuple (pod UID, container, `ProbeType`) and a tuple does not keep its hash:
every lookup hashes the three again. Enum's own `__hash__` is a Python function (the hash of
the member's name); `ProbeType` overrides it with `object.__hash__` (in C, by identity), which
is sound because members are singletons equal only to themselves. The lookups use fresh key
tuples, as a worker's or a recording's keys are, over a table of `--probes` keys.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from enum import Enum
from typing import Any

from benchmarks.common import Parser, add_output_args, environment, format_table, positive, report
from probetui.keys import ProbeKey
from probetui.spec.model import ProbeType


class _EnumHashed(Enum):
    """`ProbeType` as it would be without the override."""

    LIVENESS = "Liveness"
    READINESS = "Readiness"
    STARTUP = "Startup"


def _lookups(members: list[Any], probes: int) -> Callable[[], object]:
    """One pass of `dict.get` by a fresh `ProbeKey` over a table of `probes` keys."""
    keys = [ProbeKey(f"uid-{i // 3:08d}-0000", "web", members[i % 3]) for i in range(probes)]
    table = {k: i for i, k in enumerate(keys)}
    fresh = [ProbeKey(*k) for k in keys]
    get = table.get
    return lambda: [get(k) for k in fresh]


def compute(args: argparse.Namespace) -> dict[str, Any]:
    kinds = {"identity_hash": list(ProbeType), "enum_hash": list(_EnumHashed)}
    passes = {name: _lookups(members, args.probes) for name, members in kinds.items()}
    best = dict.fromkeys(kinds, float("inf"))
    number = 20
    # the two interleaved, the best of each kept: a shared machine's load hits both alike
    for _ in range(args.repeat):
        for name, one in passes.items():
            best[name] = min(best[name], timeit.timeit(one, number=number))
    ns = {name: t / (number * args.probes) * 1e9 for name, t in best.items()}
    return {
        "benchmark": "probe_key_hash",
        "config": {"probes": args.probes, "repeat": args.repeat},
        "environment": environment(),
        "lookup_ns": ns,
        "ratio": ns["enum_hash"] / ns["identity_hash"],
    }


def table(result: dict[str, Any]) -> str:
    ns = result["lookup_ns"]
    return format_table(
        "probetui ProbeKey lookups",
        [
            ("ProbeType by identity (ns)", f"{ns['identity_hash']:.0f}"),
            ("Enum's own hash (ns)", f"{ns['enum_hash']:.0f}"),
            ("ratio", f"{result['ratio']:.2f}x"),
        ],
    )


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="benchmarks.probe_key_hash", description=__doc__.splitlines()[0])
    p.add_argument("--probes", type=positive(int, "--probes"), default=15_000)
    p.add_argument("--repeat", type=positive(int, "--repeat"), default=15)
    add_output_args(p)
    args = p.parse_args(argv)
    return report("probe_key_hash", args, lambda: compute(args), table)


if __name__ == "__main__":
    raise SystemExit(main())
