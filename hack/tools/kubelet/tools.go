//go:build tools

// Records the kubelet's packages in go.mod/go.sum (go mod tidy).
package tools

import _ "k8s.io/kubernetes/cmd/kubelet"
