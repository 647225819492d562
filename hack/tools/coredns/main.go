// CoreDNS with only the plugins the `real` local cluster shape uses: cluster DNS for
// Services and pods (kubernetes), listening on one address (bind), a readiness endpoint
// that waits for the kubernetes plugin's first sync (ready) and errors logged (errors).
// No cache: a worker's name must resolve as soon as its endpoint is published.
// Built by hack/build-node-binaries.sh.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The order in which the plugins see a query, as in CoreDNS's plugin.cfg.
	dnsserver.Directives = []string{"bind", "ready", "errors", "kubernetes"}
}

func main() {
	coremain.Run()
}
