//go:build tools

// Records the node's packages (the kubelet and kube-proxy) in go.mod/go.sum (go mod tidy).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
