"""The cluster source: connect like kubectl, watch pods and events, shadow the kubelets.

- `config`: kubeconfig loading rules, context, namespace, in-cluster; builds API clients.
- `guard`: `--read-only`, enforced on the API client's connector.
- `observed`: pod objects (raw dicts) to the engine's Pod and PodStatus, and their changes.
- `events`: core/v1 Events to KubeletEvents, each occurrence counted once.
"""
