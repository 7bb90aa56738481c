"""Play the kubelet around the prober (kuberuntime, the pod worker): kills, restarts, back-off."""
