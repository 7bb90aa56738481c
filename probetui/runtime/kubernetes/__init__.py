"""Source a cluster: connect like kubectl, watch pods and events, shadow the kubelets.

- `config`: the connect options, context, namespace, in-cluster; builds API clients;
  `kubeconfig` reads and merges the kubeconfig files as client-go does; `credential_plugin`
  runs a user's exec plugin.
- `guard`: `--read-only`, enforced on the API client's connector.
- `observed`: pod objects (raw dicts) to the engine's Pod and PodStatus, and their changes.
- `events`: core/v1 Events to `RuntimeEvent`s, each occurrence counted once.
- `runtime`: `KubernetesRuntime`, connecting and wiring the reflectors to the three below.
- `pods`: the watched pods and events, told to the engine; the fresh read that confirms a
  divergence;
- `divergence`: the shadow's results against the kubelet's verdicts, `Divergence` events;
- `reach`: the paths to pods (`--via`), exec, the forbidden memory and RBAC hints.
"""
