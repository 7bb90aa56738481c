"""Import kubernetes_asyncio without its packages' eager imports.

What the agent does not use stays out of its memory.

`kubernetes_asyncio/__init__.py` imports every subpackage; `kubernetes_asyncio.client`'s
`__init__` imports every API class and every model, and `client.api`'s and `client.models`' do
the same: close to a thousand modules, most of the agent's memory. The agent uses the API
client, its configuration and config loaders, `CoreV1Api` and the websocket client, and reads
every answer as raw JSON (`_preload_content=False`): it never builds a model.

`defer()` puts those four packages in `sys.modules` as modules that import a name on first use
(a module `__getattr__`, PEP 562): a name the package's `__init__` imports from a submodule comes
from that submodule, a submodule by its name, and anything else runs the package's own
`__init__` after all, so every name the package has still resolves. A process that has imported
kubernetes_asyncio already is left as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types
from typing import Any

PACKAGES = (
    "kubernetes_asyncio",
    "kubernetes_asyncio.client",
    "kubernetes_asyncio.client.api",
    "kubernetes_asyncio.client.models",
)
# what a package's __init__ imports: `from X import Name [as Alias]`, `import X as Alias`
_FROM = re.compile(r"^from (kubernetes_asyncio[\w.]*) import (\w+)(?: as (\w+))?\s*$", re.M)
_IMPORT_AS = re.compile(r"^import (kubernetes_asyncio[\w.]*) as (\w+)\s*$", re.M)
# the dunder names it sets itself (`__version__`, `__all__`)
_DUNDER = re.compile(r"^(__\w+__)\s*=", re.M)


def defer() -> bool:
    """Install the deferred packages; False (and nothing done) when kubernetes_asyncio is
    imported already or its sources cannot be read."""
    if any(name in sys.modules for name in PACKAGES):
        return False
    installed: list[str] = []
    for name in PACKAGES:
        if not _install(name):
            for done in reversed(installed):
                del sys.modules[done]
            return False
        installed.append(name)
    return True


def _install(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    get_source = getattr(spec.loader, "get_source", None)
    source = get_source(name) if get_source is not None else None
    if source is None:
        return False
    where: dict[str, tuple[str, str | None]] = {}
    for m in _FROM.finditer(source):
        where[m.group(3) or m.group(2)] = (m.group(1), m.group(2))
    for m in _IMPORT_AS.finditer(source):
        where[m.group(2)] = (m.group(1), None)
    own_dunders = set(_DUNDER.findall(source))
    module = importlib.util.module_from_spec(spec)

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__") and attr not in own_dunders:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        found = where.get(attr)
        if found is not None:
            source_module = importlib.import_module(found[0])
            value = source_module if found[1] is None else getattr(source_module, found[1])
        elif attr not in own_dunders and importlib.util.find_spec(f"{name}.{attr}") is not None:
            value = importlib.import_module(f"{name}.{attr}")
        else:
            # a name this reading of the __init__ does not know: load the package for real
            _complete(module, spec)
            return getattr(module, attr)
        setattr(module, attr, value)
        return value

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return True


def _complete(module: types.ModuleType, spec: Any) -> None:
    vars(module).pop("__getattr__", None)
    spec.loader.exec_module(module)


__all__ = ["PACKAGES", "defer"]
