"""A Kubernetes API server emulator for tests: aiohttp on 127.0.0.1, real HTTP and websockets.

async with ApiEmulator() as api:            # or the `api` fixture (tests/kube/conftest.py)
    api.url                                  # http://127.0.0.1:PORT
    api.kubeconfig(tmp_path / "config", namespace="default")  # token user, current context
    api.configuration()                      # kubernetes_asyncio Configuration
    api.add_pod(make_pod("web"))             # ADDED;    update_pod / patch_pod / edit_pod: MODIFIED
    api.delete_pod("web")                    # DELETED
    api.add_event(make_event(pod, "Unhealthy", "Readiness probe failed: ..."))
    api.record_event("web", "Unhealthy", msg)   # kubelet recorder: count++ / combined
    api.map_port("web", 8080, real_port)     # port-forward and proxy reach 127.0.0.1:real_port
    api.role = "view"                        # 403 for exec/portforward/proxy and non-GET
    api.grant("get", "pods/exec")            # one verb more; from v1.35 exec also needs create
    api.add_token(t, expires=...); api.revoke_token(t)   # 401 from then on
    ApiEmulator(tls=True, tls_names=(...), tls_identity=..., path_prefix="/k8s/clusters/c")
    api.fail_next(2, 503, verb="list")       # faults; expire_watches(), cut_streams(),
    api.send_bookmarks(); api.end_watches()  # compact(), and watch timeoutSeconds
    api.requests / api.non_read_requests() / api.count_requests(verb="watch")
    await api.wait_for_watch("pods")         # a client's watch is open
"""

from .objects import (
    container,
    http_get_probe,
    make_event,
    make_pod,
    running_status,
)
from .requestinfo import RequestRecord
from .server import ApiEmulator, Role, TlsIdentity

__all__ = [
    "ApiEmulator",
    "RequestRecord",
    "Role",
    "TlsIdentity",
    "container",
    "http_get_probe",
    "make_event",
    "make_pod",
    "running_status",
]
