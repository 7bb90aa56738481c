"""The node agent (`probetui agent`, docs/agents.md) serves one node's shadow over HTTP.

A DaemonSet runs one agent per node. Each runs the cluster view's engine over the pods of its
node only, reads the kubelet's own probe counts, and serves the stream (docs/stream.md) to
readers who come through the API server's pods/proxy with the read token.

- `runtime.py`: `NodeRuntime`, the cluster source narrowed to one node (a field selector, no
  events watch, no reads its RBAC does not grant, exec observed only);
- `hub.py`: the engine's sink: publication stamps, the ring, the clients, summaries;
- `ring.py`: what was published in the last `--retain`, compact, for readers that come late;
- `client.py`: one reader: its query, its replay, its live frames, its buffer;
- `summary.py`: one probe in a few numbers, for readers that take only some pods' attempts;
- `kubelet.py`: the kubelet's `/metrics/probes`, with the ServiceAccount token;
- `promtext.py`: the Prometheus text lines read and written;
- `counts.py`: the kubelet's counts beside the shadow's (`counts` frames, mismatches);
- `metrics.py`: the agent's own `/metrics`;
- `server.py`: the HTTP server: `/healthz`, `/v1/stream`, `/metrics`, the token, the limits;
- `manifest.py`: `--print-manifest`;
- `lazy_kube.py`: kubernetes_asyncio's API client without every API class and model;
- `run.py`: `Agent`, which wires them.
"""
