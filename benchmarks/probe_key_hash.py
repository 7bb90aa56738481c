"""Micro-benchmark: a dict lookup by `ProbeKey`, as the store and the prober make them, with
`ProbeType` as it is (a `StrEnum`: str's hash), an enum hashed by identity and Enum's own hash.

    python -m benchmarks.probe_key_hash [--probes 15000] [--repeat 15] [--json [PATH]]

A `ProbeKey` is a tuple (pod UID, container, `ProbeType`) and a tuple does not keep its hash:
every lookup hashes the three again. Enum's own `__hash__` is a Python function (the hash of
the member's name); a `StrEnum` member hashes as its string, in C, the hash cached in the
string; `identity_hash` is an enum overriding `__hash__` with `object.__hash__` (in C, by
identity), the bound `str_hash` should stay within. The lookups use fresh key tuples, as a
worker's or a recording's keys are, over a table of `--probes` keys.
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
    """A plain `Enum` of the probe types, with Enum's own hash."""

    LIVENESS = "Liveness"
    READINESS = "Readiness"
    STARTUP = "Startup"


class _IdentityHashed(Enum):
    """A plain `Enum` of the probe types, hashed by identity in C."""

    LIVENESS = "Liveness"
    READINESS = "Readiness"
    STARTUP = "Startup"

    __hash__ = object.__hash__


def _lookups(members: list[Any], probes: int) -> Callable[[], object]:
    """One pass of `dict.get` by a fresh `ProbeKey` over a table of `probes` keys."""
    keys = [ProbeKey(f"uid-{i // 3:08d}-0000", "web", members[i % 3]) for i in range(probes)]
    table = {k: i for i, k in enumerate(keys)}
    fresh = [ProbeKey(*k) for k in keys]
    get = table.get
    return lambda: [get(k) for k in fresh]


def compute(args: argparse.Namespace) -> dict[str, Any]:
    kinds = {
        "identity_hash": list(_IdentityHashed),
        "enum_hash": list(_EnumHashed),
        "str_hash": list(ProbeType),
    }
    passes = {name: _lookups(members, args.probes) for name, members in kinds.items()}
    best = dict.fromkeys(kinds, float("inf"))
    number = 20
    # the two interleaved, the best of each kept: a shared machine's load hits both alike
    for _ in range(args.repeat):
        for name, one in passes.items():
            best[name] = min(best[name], timeit.timeit(one, number=number))
    ns = {name: t / (number * args.probes) * 1e9 for name, t in best.items()}
    str_ns = ns.pop("str_hash")
    return {
        "benchmark": "probe_key_hash",
        "config": {"probes": args.probes, "repeat": args.repeat},
        "environment": environment(),
        "lookup_ns": ns,
        "ratio": ns["enum_hash"] / ns["identity_hash"],
        # ProbeType itself, beside the two enums
        "probe_type_ns": str_ns,
        "probe_type_ratio": str_ns / ns["identity_hash"],
    }


def table(result: dict[str, Any]) -> str:
    ns = result["lookup_ns"]
    return format_table(
        "probetui ProbeKey lookups",
        [
            ("ProbeType, str's hash (ns)", f"{result['probe_type_ns']:.0f}"),
            ("an Enum by identity (ns)", f"{ns['identity_hash']:.0f}"),
            ("Enum's own hash (ns)", f"{ns['enum_hash']:.0f}"),
            ("ratio Enum's / identity", f"{result['ratio']:.2f}x"),
            ("ratio ProbeType / identity", f"{result['probe_type_ratio']:.2f}x"),
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
