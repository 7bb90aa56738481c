//go:build tools

// The second node's container runtime: containerd 2 and its runc shim, the release line
// containerd's own support matrix names for the kubelet that node runs.
package e2e

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
)
