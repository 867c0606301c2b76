// Command kube is the real Kubernetes control plane and kubelet as one
// binary, for cubelet's tests (the cluster issue's peers): each subcommand
// is the upstream command, built from k8s.io/kubernetes at the release
// go.mod pins, exactly as its own cmd/*/main.go starts it.
//
//	kube kube-apiserver FLAGS...
//	kube kube-controller-manager FLAGS...
//	kube kube-scheduler FLAGS...
//	kube kubelet FLAGS...
//	kube kubectl ARGS...
//	kube metrics-server FLAGS...   (sigs.k8s.io/metrics-server, for kubectl top)
//	kube cri-dump [ENDPOINT]       (every sandbox and container of a CRI runtime, verbose, as JSON)
//	kube version
//
// A link named after a subcommand (kubectl -> kube) runs it directly.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata" // kube-apiserver: timeZone support in CronJob

	"github.com/spf13/cobra"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's auth plugins
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	"k8s.io/component-base/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
	metricsserver "sigs.k8s.io/metrics-server/cmd/metrics-server/app"

	genericapiserver "k8s.io/apiserver/pkg/server"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kube kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kubectl|metrics-server|cri-dump|version [ARGS...]")
	os.Exit(2)
}

// run starts an upstream command; os.Args is already what its own main
// would see (cobra and kubectl's plugin lookup read it).
func run(c *cobra.Command) {
	os.Exit(cli.Run(c))
}

func main() {
	sub, args := filepath.Base(os.Args[0]), os.Args[1:]
	if sub == "kube" {
		if len(args) == 0 {
			usage()
		}
		sub, args = args[0], args[1:]
	}
	os.Args = append([]string{sub}, args...)
	switch sub {
	case "kube-apiserver":
		run(apiserver.NewAPIServerCommand())
	case "kube-controller-manager":
		run(controllermanager.NewControllerManagerCommand())
	case "kube-scheduler":
		run(scheduler.NewSchedulerCommand())
	case "kubelet":
		run(kubelet.NewKubeletCommand(context.Background()))
	case "metrics-server":
		run(metricsserver.NewMetricsServerCommand(genericapiserver.SetupSignalHandler()))
	case "kubectl":
		logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) // nolint:errcheck
		c := kubectl.NewDefaultKubectlCommand()
		if err := cli.RunNoErrOutput(c); err != nil {
			kubectlutil.CheckErr(err)
		}
	case "cri-dump":
		if err := criDump(args); err != nil {
			fmt.Fprintln(os.Stderr, "kube cri-dump:", err)
			os.Exit(1)
		}
	case "version":
		fmt.Println(version.Get().GitVersion)
	default:
		usage()
	}
}
