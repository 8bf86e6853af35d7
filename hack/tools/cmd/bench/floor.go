package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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
	run, started, err := c.floorStart(ctx, a, image, fmt.Sprintf("floor-%d", i))
	if started != nil {
		started.remove(c)
	}
	return run, err
}

// floorPod is what a floor run leaves to remove.
type floorPod struct{ sandboxID, logDir string }

func (p *floorPod) remove(c *criClient) { c.remove(p.sandboxID, p.logDir) }

// floorStart starts one floor pod and times it; what it started, if
// anything, is the caller's to remove, even on error.
func (c *criClient) floorStart(ctx context.Context, a *agent, image, name string) (FloorRun, *floorPod, error) {
	uid := randomUID()
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
				// As both agents ask for every sandbox (the kubelet
				// since its issue 84623), and the runtime then loads a
				// seccomp filter into the sandbox's process: the floor
				// is the same sandbox, not a cheaper one.
				Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
		},
	}
	start := time.Now()
	sandbox, err := c.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig})
	if err != nil {
		return FloorRun{}, nil, fmt.Errorf("running pod sandbox %s on %s's runtime: %w", name, a.Name, err)
	}
	pod := &floorPod{sandboxID: sandbox.PodSandboxId, logDir: logDir}
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
		return FloorRun{}, pod, fmt.Errorf("creating the container of %s on %s's runtime: %w", name, a.Name, err)
	}
	created := time.Now()
	if _, err := c.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: container.ContainerId}); err != nil {
		return FloorRun{}, pod, fmt.Errorf("starting the container of %s on %s's runtime: %w", name, a.Name, err)
	}
	started := time.Now()
	return FloorRun{
		Seconds:        started.Sub(start).Seconds(),
		SandboxSeconds: sandboxDone.Sub(start).Seconds(),
		CreateSeconds:  created.Sub(sandboxDone).Seconds(),
		StartSeconds:   started.Sub(created).Seconds(),
	}, pod, nil
}

// burstFloor starts n floor pods straight through CRI, parallelism at a
// time, and times the whole: the runtime's own floor for a burst. The pods
// are removed afterwards, untimed.
func (c *criClient) burstFloor(ctx context.Context, a *agent, image string, n, parallelism, run int) (BurstFloorRun, error) {
	pods := make([]*floorPod, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	machineStart, err := machineBusySeconds()
	if err != nil {
		return BurstFloorRun{}, err
	}
	start := time.Now()
	for range parallelism {
		wg.Go(func() {
			for i := range next {
				_, pods[i], errs[i] = c.floorStart(ctx, a, image, fmt.Sprintf("floor-burst%d-%d-%d", n, run, i))
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	machineEnd, err := machineBusySeconds()
	if err != nil {
		return BurstFloorRun{}, err
	}
	removing := make(chan *floorPod)
	for range parallelism {
		wg.Go(func() {
			for pod := range removing {
				pod.remove(c)
			}
		})
	}
	for _, pod := range pods {
		if pod != nil {
			removing <- pod
		}
	}
	close(removing)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return BurstFloorRun{}, err
	}
	return BurstFloorRun{Pods: n, Parallelism: parallelism, Seconds: elapsed.Seconds(), MachineCPUSeconds: machineEnd - machineStart}, nil
}

// fastestParallelism is the candidate whose run took least time.
func fastestParallelism(runs []BurstFloorRun) int {
	best := runs[0]
	for _, run := range runs[1:] {
		if run.Seconds < best.Seconds {
			best = run
		}
	}
	return best.Parallelism
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
