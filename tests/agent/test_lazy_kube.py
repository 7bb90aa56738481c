"""`probetui.agent.lazy_kube`: the agent loads kubernetes_asyncio's API client without every API
class and model, and every name of the packages still resolves. Each case runs in a fresh
interpreter: the deferral is for a process that has not imported kubernetes_asyncio yet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


KUBE = "[m for m in sys.modules if m.startswith('kubernetes_asyncio')]"


def test_the_agent_loads_no_api_class_or_model_it_does_not_use() -> None:
    """With `defer()` first, the agent's modules import a few dozen of kubernetes_asyncio's
    modules, none of them a model, and the names they use are the real classes."""
    got = _run(
        "import json, sys\n"
        "from probetui.agent import lazy_kube\n"
        "deferred = lazy_kube.defer()\n"
        "import probetui.agent.run, probetui.cli.agent\n"
        "from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api\n"
        "from kubernetes_asyncio.stream import WsApiClient\n"
        f"kube = {KUBE}\n"
        "print(json.dumps({'deferred': deferred, 'count': len(kube),\n"
        "    'models': [m for m in kube if '.models.' in m],\n"
        "    'names': [ApiClient.__module__, Configuration.__module__, CoreV1Api.__module__,\n"
        "              WsApiClient.__module__]}))"
    )
    assert got["deferred"] is True
    assert got["models"] == []
    assert isinstance(got["count"], int) and got["count"] < 100
    assert got["names"] == [
        "kubernetes_asyncio.client.api_client",
        "kubernetes_asyncio.client.configuration",
        "kubernetes_asyncio.client.api.core_v1_api",
        "kubernetes_asyncio.stream.ws_client",
    ]


def test_every_name_still_resolves() -> None:
    """A model by the client's name or the models package's (as the API client's deserializer
    asks for it), a subpackage, a name only the real `__init__` defines; and an unknown name is
    an AttributeError, as before."""
    got = _run(
        "import json, sys\n"
        "from probetui.agent import lazy_kube\n"
        "lazy_kube.defer()\n"
        "import kubernetes_asyncio\n"
        "from kubernetes_asyncio.client import V1Pod\n"
        "import kubernetes_asyncio.client.models\n"
        "meta = getattr(kubernetes_asyncio.client.models, 'V1ObjectMeta')\n"
        "watch = kubernetes_asyncio.watch.Watch\n"
        "version = kubernetes_asyncio.client.__version__\n"
        "try:\n"
        "    kubernetes_asyncio.client.NoSuchThing\n"
        "    missing = 'found'\n"
        "except AttributeError as e:\n"
        "    missing = str(e)\n"
        "print(json.dumps({'pod': V1Pod(metadata=meta(name='x')).metadata.name,\n"
        "    'watch': watch.__name__, 'version': version, 'missing': missing}))"
    )
    assert got["pod"] == "x"
    assert got["watch"] == "Watch"
    assert got["version"]
    assert got["missing"] == "module 'kubernetes_asyncio.client' has no attribute 'NoSuchThing'"


def test_a_process_that_imported_the_client_is_left_alone() -> None:
    got = _run(
        "import json, sys\n"
        "import kubernetes_asyncio.client\n"
        "from probetui.agent import lazy_kube\n"
        f"before = len({KUBE})\n"
        "print(json.dumps({'deferred': lazy_kube.defer(), 'same': before == len("
        f"{KUBE})}}))"
    )
    assert got == {"deferred": False, "same": True}
