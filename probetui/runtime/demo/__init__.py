"""Bundle the demo for `probetui demo`: small services and the Pod manifest that runs them.

The services are `services.py`'s; the manifest is `demo.yaml`, filled in by `manifest.py` and
run under the local runtime.

The manifest half is imported on first use, so that starting a demo service (`python -m
probetui.runtime.demo.services`) does not load the YAML parser and the Pod model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probetui.runtime.demo.manifest import (
        DEMO_NAMESPACE,
        demo_manifest_text,
        demo_port_names,
        load_demo,
    )

__all__ = ["DEMO_NAMESPACE", "demo_manifest_text", "demo_port_names", "load_demo"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from probetui.runtime.demo import manifest

        return getattr(manifest, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
