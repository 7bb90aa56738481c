"""Screenshots of `probetui demo` for the README: SVG always, PNG where a converter exists.

    python3 scripts/screenshots.py [--out screenshots] [--timeout 120]
    python3 scripts/screenshots.py --cluster KUBECONFIG -n NS [--pod NAME]   (cluster.svg)

Runs the real demo (local processes on loopback) under the real engine, with the Textual app
headless at 160x45, waits until each scene has happened, and saves:

    overview.svg   a flapping readiness probe beside the whole workload list
    restart.svg    a container its liveness probe keeps killing (kills, exits, back-off)
    help.svg       the help screen: every key and glyph

With `--cluster` it shoots the cluster view instead: the shadow beside a real kubelet, `--via
direct`, on the pod named by `--pod` (default flap-ft1) once its readiness has flipped a few
times. The e2e test cluster is where that was made (tests/e2e: `python -m tests.e2e.cluster up`,
the shadow pod set applied, this script run inside the client namespace).

PNG copies are made with cairosvg (pip install cairosvg) or rsvg-convert when either is there;
the SVG's web font is swapped for a local monospace one first, since a converter cannot fetch
it. Takes about a minute: the demo's restarts happen in real time.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import time
from pathlib import Path

from probetui.engine import Engine
from probetui.keys import ContainerKey
from probetui.runtime.demo import load_demo
from probetui.runtime.local.groups import REGISTRY
from probetui.runtime.local.runtime import LocalRuntime
from probetui.timeline.store import Store
from probetui.ui.app import ProbeApp
from probetui.ui.screens.main import MainScreen

SIZE = (160, 45)
PNG_WIDTH = 1920


def container_key(store: Store, pod: str, container: str) -> ContainerKey | None:
    for uid, entry in store.pods.items():
        if entry.pod.name == pod:
            return ContainerKey(uid, container)
    return None


def restarts(store: Store, key: ContainerKey | None) -> int:
    if key is None or key.pod_uid not in store.pods:
        return 0
    cs = store.pods[key.pod_uid].status.lookup(key.container)
    return cs.restart_count if cs is not None else 0


def flips(store: Store, key: ContainerKey | None) -> int:
    """Published readiness changes of a container (▼ and ▲ in its timeline)."""
    history = store.containers.get(key) if key is not None else None
    if history is None:
        return 0
    return sum(len(h.changes(0, float("inf"))) for h in history.probes.values())


async def wait_until(what: str, condition, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"screenshots: gave up waiting for {what} after {timeout:g}s")
        await asyncio.sleep(0.25)


def to_png(svg: Path) -> Path | None:
    png = svg.with_suffix(".png")
    text = svg.read_text(encoding="utf-8")
    local = text.replace('"Fira Code"', '"DejaVu Sans Mono"').replace(
        "Fira Code, monospace", "DejaVu Sans Mono, monospace"
    )
    try:
        import cairosvg  # type: ignore[import-not-found]
    except ImportError:
        cairosvg = None
    if cairosvg is not None:
        cairosvg.svg2png(bytestring=local.encode(), write_to=str(png), output_width=PNG_WIDTH)
        return png
    rsvg = shutil.which("rsvg-convert")
    if rsvg is not None:
        subprocess.run(
            [rsvg, "-w", str(PNG_WIDTH), "-o", str(png)],
            input=local.encode(),
            check=True,
            timeout=60,
        )
        return png
    return None


async def shoot(out: Path, timeout: float) -> list[Path]:
    store = Store()
    engine = Engine(LocalRuntime(load_demo(), source="demo"), [store])
    app = ProbeApp(engine, store, screenshot_dir=out)
    saved: list[Path] = []

    def save(name: str) -> None:
        path = Path(app.save_screenshot(f"{name}.svg", str(out)))
        saved.append(path)
        print(f"saved {path}")

    async with app.run_test(size=SIZE) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        flap = container_key(store, "web-flap-ft1", "web")
        unguarded = container_key(store, "slow-unguarded", "app")

        await wait_until("the demo pods", lambda: container_key(store, "slow-unguarded", "app"), 30)
        flap = container_key(store, "web-flap-ft1", "web")
        unguarded = container_key(store, "slow-unguarded", "app")

        # overview: the flapping readiness after it went down and came back up
        await wait_until("web-flap-ft1 to flap", lambda: flips(store, flap) >= 4, timeout)
        assert flap is not None
        main.workloads.select(flap)
        for _ in range(3):  # its readiness probe is the one that flaps
            if main.probe.key == "readiness":
                break
            await pilot.press("p")
        await pilot.pause(0.3)
        save("overview")

        # a container mid-restart: killed by liveness again and again, now waiting to start
        await wait_until(
            "slow-unguarded to restart", lambda: restarts(store, unguarded) >= 3, timeout
        )
        assert unguarded is not None
        main.workloads.select(unguarded)
        await pilot.pause(0.3)
        save("restart")

        await pilot.press("question_mark")
        await pilot.pause(0.3)
        save("help")
        await pilot.press("escape", "q")
    return saved


async def shoot_cluster(
    out: Path, timeout: float, kubeconfig: str, ns: str, pod: str
) -> list[Path]:
    from probetui.runtime.kubernetes.config import ConnectOptions, resolve
    from probetui.runtime.kubernetes.runtime import KubernetesRuntime

    target = resolve(ConnectOptions(kubeconfig=kubeconfig, namespace=ns))
    store = Store()
    engine = Engine(KubernetesRuntime(target, via="direct", fail_fast=True), [store])
    app = ProbeApp(engine, store, screenshot_dir=out)
    async with app.run_test(size=SIZE) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        await wait_until(f"pod {pod}", lambda: container_key(store, pod, "web"), 30)
        key = container_key(store, pod, "web")
        await wait_until(f"{pod} to flip", lambda: flips(store, key) >= 4, timeout)
        assert key is not None
        main.workloads.select(key)
        await pilot.pause(0.3)
        path = Path(app.save_screenshot("cluster.svg", str(out)))
        print(f"saved {path}")
        await pilot.press("q")
    return [path]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="screenshots", help="directory (default screenshots/)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait per scene")
    parser.add_argument("--cluster", metavar="KUBECONFIG", help="shoot the cluster view instead")
    parser.add_argument("-n", "--namespace", default="shadow", help="with --cluster")
    parser.add_argument("--pod", default="flap-ft1", help="with --cluster: the pod to select")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    REGISTRY.install_exit_handlers()
    if args.cluster:
        saved = asyncio.run(
            shoot_cluster(out, args.timeout, args.cluster, args.namespace, args.pod)
        )
    else:
        saved = asyncio.run(shoot(out, args.timeout))
    pngs = [p for p in (to_png(svg) for svg in saved) if p is not None]
    for png in pngs:
        print(f"saved {png}")
    if not pngs:
        print("no PNG: install cairosvg (pip) or rsvg-convert (librsvg2-bin) for PNG copies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
