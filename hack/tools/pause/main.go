// A pod sandbox's placeholder process: it holds the pod's namespaces open, reaps
// orphaned children (it is PID 1 when the pod shares its process namespace) and exits
// on SIGINT or SIGTERM. Built static by hack/build-node-images.sh, because
// registry.k8s.io (where the usual pause image lives) is unreachable here.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	children := make(chan os.Signal, 8)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			os.Exit(0)
		case <-children:
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
