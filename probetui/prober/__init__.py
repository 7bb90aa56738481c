"""The kubelet prober replica (`pkg/kubelet/prober`): worker, manager, results, prober."""
