// kube cri-dump [ENDPOINT]: every pod sandbox and container the CRI runtime
// holds, with the verbose status (the CRI config it was created with and the
// OCI spec), as one JSON document on stdout. The kubelet oracle
// (tests/vm/tools/oracle.py collect) reads it: one process instead of a
// `ctr containers info` per container, which under emulation took a minute.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type criItem struct {
	ID        string            `json:"id"`
	Kind      string            `json:"kind"` // "sandbox" or "container"
	Labels    map[string]string `json:"labels"`
	CreatedAt int64             `json:"createdAt"`
	Info      json.RawMessage   `json:"info"` // the runtime's verbose "info": config, runtimeSpec
}

func criDump(args []string) error {
	endpoint := "/run/containerd/containerd.sock"
	if len(args) > 0 {
		endpoint = strings.TrimPrefix(args[0], "unix://")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return fmt.Errorf("%s: %w", endpoint, err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	items := []criItem{}
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("%s: ListPodSandbox: %w", endpoint, err)
	}
	for _, s := range sbs.Items {
		st, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: s.Id, Verbose: true})
		if err != nil {
			continue // removed since the listing
		}
		items = append(items, criItem{s.Id, "sandbox", s.Labels, s.CreatedAt, json.RawMessage(infoOf(st.Info))})
	}
	cs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return fmt.Errorf("%s: ListContainers: %w", endpoint, err)
	}
	for _, c := range cs.Containers {
		st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id, Verbose: true})
		if err != nil {
			continue // removed since the listing (an old attempt)
		}
		items = append(items, criItem{c.Id, "container", c.Labels, c.CreatedAt, json.RawMessage(infoOf(st.Info))})
	}
	enc := json.NewEncoder(os.Stdout)
	return enc.Encode(map[string]any{"items": items})
}

// infoOf: the verbose map's "info" value, a JSON document of its own
func infoOf(m map[string]string) string {
	if s, ok := m["info"]; ok && json.Valid([]byte(s)) {
		return s
	}
	return "{}"
}
