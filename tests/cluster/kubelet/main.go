// Command kubelet is the upstream kubelet alone, started exactly as
// k8s.io/kubernetes/cmd/kubelet/kubelet.go starts it, for the benchmark peer
// (tests/vm/bench/peer.sh): the multi-call kube binary also carries the
// control plane and kubectl, whose package initialisers would count against
// kubelet's memory and start time.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
