package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criClient is a plain CRI client of one agent's containerd.
type criClient struct {
	conn    *grpc.ClientConn
	runtime runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient
}

func dialCRI(endpoint string) (*criClient, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", endpoint, err)
	}
	return &criClient{
		conn:    conn,
		runtime: runtimeapi.NewRuntimeServiceClient(conn),
		images:  runtimeapi.NewImageServiceClient(conn),
	}, nil
}

// pull makes sure the runtime has the images, so no workload (and no floor
// run) waits for a pull.
func (c *criClient) pull(ctx context.Context, images ...string) error {
	for _, image := range images {
		if _, err := c.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
			return fmt.Errorf("pulling %s: %w", image, err)
		}
	}
	return nil
}

// floorRun starts one pod straight through CRI the way an agent does for
// the bench's pods — a sandbox with its network, then the pause container
// created and started — times the three calls, then removes the pod
// (untimed). It is what cri-smoke does, without the checks.
func (c *criClient) floorRun(ctx context.Context, a *agent, image string, i int) (FloorRun, error) {
	uid := randomUID()
	name := fmt.Sprintf("floor-%d", i)
	logDir := filepath.Join(a.StateDir, "floor-logs", "bench_"+name+"_"+uid)
	sandboxConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "bench", Uid: uid},
		Hostname:     name,
		LogDirectory: logDir,
		Labels:       map[string]string{"app": "bench-floor"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: filepath.Join(a.CgroupRoot, "pod"+uid),
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_POD,
					Pid:     runtimeapi.NamespaceMode_CONTAINER,
					Ipc:     runtimeapi.NamespaceMode_POD,
				},
			},
		},
	}
	start := time.Now()
	sandbox, err := c.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig})
	if err != nil {
		return FloorRun{}, fmt.Errorf("running pod sandbox %s on %s's runtime: %w", name, a.Name, err)
	}
	defer c.remove(sandbox.PodSandboxId, logDir)
	sandboxDone := time.Now()
	container, err := c.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sandbox.PodSandboxId,
		SandboxConfig: sandboxConfig,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
			Image:    &runtimeapi.ImageSpec{Image: image},
			LogPath:  "main/0.log",
			Linux:    &runtimeapi.LinuxContainerConfig{},
		},
	})
	if err != nil {
		return FloorRun{}, fmt.Errorf("creating the container of %s on %s's runtime: %w", name, a.Name, err)
	}
	created := time.Now()
	if _, err := c.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: container.ContainerId}); err != nil {
		return FloorRun{}, fmt.Errorf("starting the container of %s on %s's runtime: %w", name, a.Name, err)
	}
	started := time.Now()
	return FloorRun{
		Seconds:        started.Sub(start).Seconds(),
		SandboxSeconds: sandboxDone.Sub(start).Seconds(),
		CreateSeconds:  created.Sub(sandboxDone).Seconds(),
		StartSeconds:   started.Sub(created).Seconds(),
	}, nil
}

// remove stops and removes a floor pod with a context of its own, so it
// goes even when the run's context has ended.
func (c *criClient) remove(sandboxID, logDir string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = c.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandboxID})
	_, _ = c.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sandboxID})
	_ = os.RemoveAll(logDir)
}

func randomUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
