// cri-smoke runs one pod straight through CRI — sandbox with its network,
// image pull, one container — and prints what each call took and the pod's
// address and output. It proves a runtime, its CNI configuration and its
// images work before any node agent is involved, and measures the runtime's
// own floor for starting a pod.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type options struct {
	endpoint     string
	image        string
	name         string
	namespace    string
	cgroupParent string
	logDir       string
	keep         bool
	timeout      time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.endpoint, "endpoint", "", "CRI endpoint, unix:///path/to/socket")
	flag.StringVar(&o.image, "image", "", "image of the container (busybox or alike: it runs sh and ip)")
	flag.StringVar(&o.name, "name", "cri-smoke", "pod name")
	flag.StringVar(&o.namespace, "namespace", "default", "pod namespace")
	flag.StringVar(&o.cgroupParent, "cgroup-parent", "", "cgroup under which the pod's cgroup is made (cgroupfs path)")
	flag.StringVar(&o.logDir, "log-dir", "", "folder under which the pod's log folder is made")
	flag.BoolVar(&o.keep, "keep", false, "leave the pod running instead of removing it")
	flag.DurationVar(&o.timeout, "timeout", 2*time.Minute, "deadline for the whole run")
	flag.Parse()
	if o.endpoint == "" || o.image == "" || o.logDir == "" {
		fmt.Fprintln(os.Stderr, "cri-smoke: -endpoint, -image and -log-dir are required")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "cri-smoke: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	conn, err := grpc.NewClient(o.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", o.endpoint, err)
	}
	defer conn.Close()
	runtime := runtimeapi.NewRuntimeServiceClient(conn)
	images := runtimeapi.NewImageServiceClient(conn)

	uid := randomUID()
	podLogDir := filepath.Join(o.logDir, o.namespace+"_"+o.name+"_"+uid)
	sandboxConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: o.name, Namespace: o.namespace, Uid: uid},
		Hostname:     o.name,
		LogDirectory: podLogDir,
		Labels:       map[string]string{"app": "cri-smoke"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_POD,
					Pid:     runtimeapi.NamespaceMode_CONTAINER,
					Ipc:     runtimeapi.NamespaceMode_POD,
				},
			},
		},
	}
	if o.cgroupParent != "" {
		sandboxConfig.Linux.CgroupParent = filepath.Join(o.cgroupParent, "pod"+uid)
	}

	start := time.Now()
	step := func(what string, since time.Time) {
		fmt.Printf("%-22s %v\n", what, time.Since(since).Round(time.Millisecond))
	}

	t := time.Now()
	if _, err := images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: o.image}}); err != nil {
		return fmt.Errorf("pull image %s: %w", o.image, err)
	}
	step("PullImage", t)

	t = time.Now()
	sandbox, err := runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig})
	if err != nil {
		return fmt.Errorf("run pod sandbox %s/%s: %w", o.namespace, o.name, err)
	}
	step("RunPodSandbox", t)
	podStart := t

	t = time.Now()
	container, err := runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sandbox.PodSandboxId,
		SandboxConfig: sandboxConfig,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
			Image:    &runtimeapi.ImageSpec{Image: o.image},
			Command:  []string{"sh", "-c", "echo hello from $(hostname); ip -4 -o addr show eth0; exec sleep 3600"},
			LogPath:  "main/0.log",
			Linux:    &runtimeapi.LinuxContainerConfig{},
		},
	})
	if err != nil {
		return fmt.Errorf("create container in %s: %w", sandbox.PodSandboxId, err)
	}
	step("CreateContainer", t)

	t = time.Now()
	if _, err := runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: container.ContainerId}); err != nil {
		return fmt.Errorf("start container %s: %w", container.ContainerId, err)
	}
	step("StartContainer", t)
	step("pod started (3 calls)", podStart)

	status, err := runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandbox.PodSandboxId})
	if err != nil {
		return fmt.Errorf("pod sandbox status %s: %w", sandbox.PodSandboxId, err)
	}
	fmt.Printf("sandbox %s ip %s\n", sandbox.PodSandboxId, status.GetStatus().GetNetwork().GetIp())

	logPath := filepath.Join(podLogDir, "main", "0.log")
	output, err := waitForLines(ctx, logPath, 2)
	if err != nil {
		return err
	}
	fmt.Printf("log %s:\n%s", logPath, output)

	if o.keep {
		fmt.Printf("kept pod %s/%s (sandbox %s)\n", o.namespace, o.name, sandbox.PodSandboxId)
		return nil
	}
	t = time.Now()
	if _, err := runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandbox.PodSandboxId}); err != nil {
		return fmt.Errorf("stop pod sandbox %s: %w", sandbox.PodSandboxId, err)
	}
	if _, err := runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sandbox.PodSandboxId}); err != nil {
		return fmt.Errorf("remove pod sandbox %s: %w", sandbox.PodSandboxId, err)
	}
	step("Stop+RemovePodSandbox", t)
	if err := os.RemoveAll(podLogDir); err != nil {
		return fmt.Errorf("remove pod log folder: %w", err)
	}
	step("total", start)
	return nil
}

// waitForLines polls the CRI log file until it holds n lines.
func waitForLines(ctx context.Context, path string, n int) ([]byte, error) {
	for {
		data, err := os.ReadFile(path)
		if err == nil && bytes.Count(data, []byte("\n")) >= n {
			return data, nil
		}
		select {
		case <-ctx.Done():
			return data, fmt.Errorf("wait for %d lines in %s: %w", n, path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func randomUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
