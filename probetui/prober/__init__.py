"""Replicate the kubelet's prober (`pkg/kubelet/prober`): worker, manager, results, prober."""
