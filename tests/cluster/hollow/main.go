// Command hollow is the scale issue's test peer (make bench-scale): the two
// kinds of hollow node's runtimes, built from k8s.io/kubernetes at the
// release tests/cluster/go.mod pins.
//
//	hollow kubemark FLAGS...   kubemark's hollow node, exactly as
//	                           cmd/kubemark/hollow-node.go starts it
//	                           (--morph=kubelet: the real kubelet code on
//	                           the fake remote runtime, in its process)
//	hollow fake-cri DIR N      N of that same fake remote runtime
//	                           (k8s.io/cri-client/pkg/fake), one per socket
//	                           DIR/cri-0.sock … DIR/cri-N-1.sock, in one
//	                           process, for N hollow cubelets
//
// A link named after a subcommand runs it directly.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/kubernetes/cmd/kubemark/app"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: hollow kubemark FLAGS... | hollow fake-cri DIR N")
	os.Exit(2)
}

// fakeCRI serves n fake runtimes and stays until SIGTERM or SIGINT.
func fakeCRI(dir string, n int) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "fake-cri: %v\n", err)
		os.Exit(1)
	}
	rts := make([]*fakeremote.RemoteRuntime, 0, n)
	for i := 0; i < n; i++ {
		sock := filepath.Join(dir, fmt.Sprintf("cri-%d.sock", i))
		os.Remove(sock)
		rt := fakeremote.NewFakeRemoteRuntime()
		if err := rt.Start("unix://" + sock); err != nil {
			fmt.Fprintf(os.Stderr, "fake-cri: %s: %v\n", sock, err)
			os.Exit(1)
		}
		rts = append(rts, rt)
	}
	fmt.Printf("fake-cri: %d runtimes on %s/cri-*.sock\n", n, dir)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	for _, rt := range rts {
		rt.Stop()
	}
}

func main() {
	sub, args := filepath.Base(os.Args[0]), os.Args[1:]
	if sub == "hollow" {
		if len(args) == 0 {
			usage()
		}
		sub, args = args[0], args[1:]
	}
	os.Args = append([]string{sub}, args...)
	switch sub {
	case "kubemark":
		os.Exit(cli.Run(app.NewHollowNodeCommand()))
	case "fake-cri":
		if len(args) != 2 {
			usage()
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 {
			usage()
		}
		fakeCRI(args[0], n)
	default:
		usage()
	}
}
