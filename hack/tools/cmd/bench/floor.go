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
func (c *criClient) floorRun(ctx context.Context, a *agent, main floorContainer, i int) (FloorRun, error) {
	run, started, err := c.floorStart(ctx, a, main, fmt.Sprintf("floor-%d", i))
	if started != nil {
		started.remove(c)
	}
	return run, err
}

// floorPod is what a floor run leaves to remove.
type floorPod struct{ sandboxID, logDir string }

func (p *floorPod) remove(c *criClient) { c.remove(p.sandboxID, p.logDir) }

// floorContainer is what a floor pod's container asks of the runtime.
type floorContainer struct {
	image   string
	command []string
	envs    []*runtimeapi.KeyValue
	mounts  []*runtimeapi.Mount
}

// A floor pod's container asks of the runtime what the same pod's
// container asks once an agent has done its part: the bench's pods run
// with the default ServiceAccount and service links, so the container has
// the service links' environment and three bind mounts (the token's
// folder, /etc/hosts, the termination log), and a users' pod has its
// Secret's variable and its ConfigMap's folder besides. The mounted files
// are written once, under a folder of the floor's: writing them is an
// agent's work, not the runtime's.

// pauseFloor is the bench's pause pods' container (pod).
func pauseFloor(image, dir string) (floorContainer, error) {
	return floorWith(floorContainer{image: image}, dir, false)
}

// userFloor is a users' pod's container (userPod): busybox running the
// same command.
func userFloor(image, dir string) (floorContainer, error) {
	c := floorContainer{image: image, command: sleeperCommand}
	c.envs = append(c.envs, &runtimeapi.KeyValue{Key: "PASSWORD", Value: []byte("bench")})
	return floorWith(c, dir, true)
}

func floorWith(c floorContainer, dir string, configMap bool) (floorContainer, error) {
	for key, value := range map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT": "tcp://10.0.0.1:443", "KUBERNETES_PORT_443_TCP": "tcp://10.0.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.0.0.1",
	} {
		c.envs = append(c.envs, &runtimeapi.KeyValue{Key: key, Value: []byte(value)})
	}
	for _, m := range []struct {
		name, containerPath string
		folder, readOnly    bool
	}{
		{"config", "/etc/bench", true, true},
		{"token", "/var/run/secrets/kubernetes.io/serviceaccount", true, true},
		{"hosts", "/etc/hosts", false, false},
		{"termination-log", "/dev/termination-log", false, false},
	} {
		if m.name == "config" && !configMap {
			continue
		}
		hostPath := filepath.Join(dir, m.name)
		var err error
		if m.folder {
			err = errors.Join(os.MkdirAll(hostPath, 0o755), os.WriteFile(filepath.Join(hostPath, "greeting"), []byte("hello\n"), 0o644))
		} else {
			err = os.WriteFile(hostPath, []byte("127.0.0.1\tlocalhost\n"), 0o644)
		}
		if err != nil {
			return floorContainer{}, fmt.Errorf("the floor pod's %s: %w", m.name, err)
		}
		c.mounts = append(c.mounts, &runtimeapi.Mount{ContainerPath: m.containerPath, HostPath: hostPath, Readonly: m.readOnly})
	}
	return c, nil
}

// floorMains are each agent's floor containers by workload (pause: ""),
// their files under the agent's state folder, which cleanup removes.
func floorMains(agents []*agent, pauseImage, userImage string) (mains map[string]map[string]floorContainer, cleanup func(), err error) {
	mains = map[string]map[string]floorContainer{}
	var dirs []string
	cleanup = func() {
		for _, dir := range dirs {
			_ = os.RemoveAll(dir)
		}
	}
	for _, a := range agents {
		dir := filepath.Join(a.StateDir, "floor-volumes")
		dirs = append(dirs, dir)
		pause, err := pauseFloor(pauseImage, dir)
		if err != nil {
			cleanup()
			return nil, func() {}, err
		}
		user, err := userFloor(userImage, dir)
		if err != nil {
			cleanup()
			return nil, func() {}, err
		}
		mains[a.Name] = map[string]floorContainer{"": pause, userWorkload: user}
	}
	return mains, cleanup, nil
}

// floorStart starts one floor pod and times it; what it started, if
// anything, is the caller's to remove, even on error.
func (c *criClient) floorStart(ctx context.Context, a *agent, main floorContainer, name string) (FloorRun, *floorPod, error) {
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
			Image:    &runtimeapi.ImageSpec{Image: main.image},
			Command:  main.command,
			Envs:     main.envs,
			Mounts:   main.mounts,
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

// burstFloor starts n floor pods of workload (see BurstRun.Workload)
// straight through CRI, parallelism at a time, and times the whole: the
// runtime's own floor for a burst. The pods are removed afterwards,
// untimed.
func (c *criClient) burstFloor(ctx context.Context, a *agent, workload string, main floorContainer, nodeCPUs []int, n, parallelism, run int) (BurstFloorRun, error) {
	pods := make([]*floorPod, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	runtimeMeter, err := startRuntimeUsage(a)
	if err != nil {
		return BurstFloorRun{}, err
	}
	busyStart, err := readCPUBusy(nodeCPUs)
	if err != nil {
		return BurstFloorRun{}, err
	}
	start := time.Now()
	for range parallelism {
		wg.Go(func() {
			for i := range next {
				_, pods[i], errs[i] = c.floorStart(ctx, a, main, fmt.Sprintf("floor-%sburst%d-%d-%d", workload, n, run, i))
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	busyEnd, err := readCPUBusy(nodeCPUs)
	if err != nil {
		return BurstFloorRun{}, err
	}
	busy := busyEnd.since(busyStart)
	runtimeCPU, err := runtimeMeter.stop()
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
	return BurstFloorRun{Workload: workload, Pods: n, Parallelism: parallelism, Seconds: elapsed.Seconds(), MachineCPUSeconds: busy.machine, NodeCPUSeconds: busy.node, ContainerdCPUSeconds: runtimeCPU.CPUSeconds}, nil
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
