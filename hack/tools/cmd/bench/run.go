package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// agentsRun prepares the namespace, the watch and the runtimes' images,
// warms each agent up with one pod, then runs every workload. It returns
// the windows whose API requests are still to be counted, even on error.
func agentsRun(ctx context.Context, f agentsFlags, agents []*agent, results *Results) ([]*auditWindow, error) {
	config, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", f.kubeconfig, err)
	}
	// A burst is created at once: no client-side rate limit may spread it.
	config.QPS, config.Burst = 1000, 1000
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("building the API client: %w", err)
	}
	r := &runner{
		client:     client,
		ns:         f.namespace,
		settings:   f.settings,
		tracker:    newTracker(),
		agents:     agents,
		results:    results,
		podTimeout: f.podTimeout,
	}

	for _, a := range agents {
		if err := describeAgent(ctx, client, a, results.Agents[a.Name]); err != nil {
			return nil, err
		}
		cri, err := dialCRI(a.CRIEndpoint)
		if err != nil {
			return nil, err
		}
		err = cri.pull(ctx, f.settings.Image, f.settings.InitImage)
		_ = cri.conn.Close()
		if err != nil {
			return nil, fmt.Errorf("%s's runtime: %w", a.Name, err)
		}
	}
	if err := prepareNamespace(ctx, client, f.namespace); err != nil {
		return nil, err
	}
	if err := r.tracker.run(ctx, client, f.namespace); err != nil {
		return nil, err
	}

	// The first pod an agent runs walks cold paths (connections, caches):
	// it is not measured.
	for _, a := range agents {
		if _, err := r.single(ctx, a, r.pod(a, a.Name+"-warmup", "warmup")); err != nil {
			return r.windows, fmt.Errorf("warming up: %w", err)
		}
	}
	r.windows = nil

	floors, closeFloors, err := dialFloors(agents)
	if err != nil {
		return r.windows, err
	}
	defer closeFloors()
	r.floors = floors
	mains, cleanup, err := floorMains(agents, f.settings.Image, f.settings.InitImage)
	if err != nil {
		return r.windows, err
	}
	defer cleanup()
	r.floorMains = mains
	if len(f.burstFloorParallelism) > 0 {
		r.burstFloor = &burstFloorPlan{candidates: f.burstFloorParallelism, parallelism: map[string]int{}}
	}
	log.Printf("one pod at a time, %d runs per agent, each with the other agent frozen, each pair followed by a floor run on each runtime with both frozen", f.settings.SingleRuns)
	if f.settings.SingleRuns > 0 {
		// The floor's first run walks cold paths too.
		if err := r.floorBetween(ctx, -1); err != nil {
			return r.windows, err
		}
	}
	if err := r.runSingles(ctx, "single", f.settings.SingleRuns, func(a *agent, name string) *corev1.Pod {
		return r.pod(a, name, "single")
	}, func(ar *AgentResults, run PodRun) { ar.Single = append(ar.Single, run) }, r.floorBetween); err != nil {
		return r.windows, err
	}
	log.Printf("one pod with an init container, %d runs per agent", f.settings.InitRuns)
	if err := r.runSingles(ctx, "init", f.settings.InitRuns, r.initPod,
		func(ar *AgentResults, run PodRun) { ar.Init = append(ar.Init, run) }, nil); err != nil {
		return r.windows, err
	}
	log.Printf("one users' pod at a time, %d runs per agent", f.settings.UserRuns)
	if err := r.runSingles(ctx, "user", f.settings.UserRuns, r.userPod,
		func(ar *AgentResults, run PodRun) { ar.UserPods = append(ar.UserPods, run) }, nil); err != nil {
		return r.windows, err
	}
	log.Printf("one pod of three containers with a readiness probe, %d runs per agent", f.settings.ThreeRuns)
	if err := r.runSingles(ctx, "three", f.settings.ThreeRuns, r.threeContainerPod,
		func(ar *AgentResults, run PodRun) { ar.ThreeContainers = append(ar.ThreeContainers, run) }, nil); err != nil {
		return r.windows, err
	}
	for _, n := range f.settings.Bursts {
		log.Printf("bursts of %d, %d runs per agent", n, f.settings.BurstRuns[n])
		if err := r.runBursts(ctx, r.pauseBurst(), n, f.settings.BurstRuns[n]); err != nil {
			return r.windows, err
		}
	}
	for _, n := range f.settings.UserBursts {
		log.Printf("bursts of %d users' pods, %d runs per agent", n, f.settings.UserBurstRuns[n])
		if err := r.runBursts(ctx, r.userBurst(), n, f.settings.UserBurstRuns[n]); err != nil {
			return r.windows, err
		}
	}
	return r.windows, nil
}

// describeAgent notes the agent's and its runtime's versions, as its Node
// reports them, and checks the Node is Ready.
func describeAgent(ctx context.Context, client kubernetes.Interface, a *agent, results *AgentResults) error {
	node, err := client.CoreV1().Nodes().Get(ctx, a.Node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s of %s: %w", a.Node, a.Name, err)
	}
	ready := false
	for _, condition := range node.Status.Conditions {
		if condition.Type == corev1.NodeReady {
			ready = condition.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return fmt.Errorf("node %s of %s is not Ready", a.Node, a.Name)
	}
	results.Version = node.Status.NodeInfo.KubeletVersion
	results.RuntimeVersion = node.Status.NodeInfo.ContainerRuntimeVersion
	return nil
}

// prepareNamespace creates the bench's namespace and waits for what the
// controller-manager puts in it (the default ServiceAccount and the root
// CA ConfigMap), without which pods cannot be created or started.
func prepareNamespace(ctx context.Context, client kubernetes.Interface, name string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		if _, err := client.CoreV1().ConfigMaps(name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the default ServiceAccount and kube-root-ca.crt in %s: %w", name, err)
	}
	if err := createUserObjects(ctx, client, name); err != nil {
		return err
	}
	pods, err := client.CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods in %s: %w", name, err)
	}
	if len(pods.Items) > 0 {
		return fmt.Errorf("namespace %s already holds %d pods: the bench wants a fresh stack", name, len(pods.Items))
	}
	return nil
}

// createUserObjects makes the ConfigMap and the Secret users' pods read.
func createUserObjects(ctx context.Context, client kubernetes.Interface, ns string) error {
	configMap := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: userConfigMap, Namespace: ns},
		Data:       map[string]string{"greeting": "hello", "settings.yaml": "level: info\n"},
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, configMap, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating configmap %s/%s: %w", ns, userConfigMap, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: userSecret, Namespace: ns},
		StringData: map[string]string{"password": "bench"},
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating secret %s/%s: %w", ns, userSecret, err)
	}
	return nil
}

// runFloor takes the runtime's single floor on each agent's containerd,
// the agents stopped, alternating between the runtimes, when the agents'
// run had no single-pod runs to take it between (the burst floor is
// always taken between the bursts).
func runFloor(ctx context.Context, args []string) error {
	var specs agentFlag
	var in string
	var runs int
	flags := flag.NewFlagSet("floor", flag.ExitOnError)
	flags.Var(&specs, "agent", "NAME=ENVFILE of an agent whose runtime is measured (give both)")
	flags.StringVar(&in, "in", "bench.json", "the results to add the floor to")
	flags.IntVar(&runs, "runs", 20, "runs per runtime")
	_ = flags.Parse(args)
	agents, envs, err := parseAgents(specs)
	if err != nil {
		return err
	}
	image, err := envs[0].get("PAUSE_IMAGE")
	if err != nil {
		return err
	}
	results, err := readResults(in)
	if err != nil {
		return err
	}
	clients := map[string]*criClient{}
	for _, a := range agents {
		if results.Agents[a.Name] == nil {
			return fmt.Errorf("%s has no results for agent %s", in, a.Name)
		}
		if pid, err := readPIDFile(a.pidFile()); err == nil {
			return fmt.Errorf("%s is still running (pid %d): the floor is measured with no agent", a.Name, pid)
		}
		c, err := dialCRI(a.CRIEndpoint)
		if err != nil {
			return err
		}
		defer c.conn.Close()
		if err := c.pull(ctx, image); err != nil {
			return fmt.Errorf("%s's runtime: %w", a.Name, err)
		}
		clients[a.Name] = c
	}
	if len(results.Agents[agents[0].Name].Floor) == 0 {
		userImage, err := envs[0].get("BUSYBOX_IMAGE")
		if err != nil {
			return err
		}
		mains, cleanup, err := floorMains(agents, image, userImage)
		if err != nil {
			return err
		}
		defer cleanup()
		if err := measureSingleFloor(ctx, agents, clients, results, mains, runs); err != nil {
			return err
		}
	}
	for _, a := range agents {
		var floor []float64
		for _, run := range results.Agents[a.Name].Floor {
			floor = append(floor, run.Seconds)
		}
		s := Summarize(floor)
		log.Printf("floor on %s's runtime: %.3f / %.3f / %.3f s (min / median / max)", a.Name, s.Min, s.Median, s.Max)
	}
	return writeResults(in, results)
}

// measureSingleFloor takes the single floor all at once, alternating
// between the runtimes.
func measureSingleFloor(ctx context.Context, agents []*agent, clients map[string]*criClient, results *Results, mains map[string]map[string]floorContainer, runs int) error {
	log.Printf("the runtime's floor, %d runs per runtime", runs)
	// One run on each runtime first, unmeasured, as the agents were warmed.
	for i := -1; i < runs; i++ {
		for _, a := range inTurn(agents, i+1) {
			run, err := clients[a.Name].floorRun(ctx, a, mains[a.Name][""], i+1)
			if err != nil {
				return err
			}
			if i >= 0 {
				results.Agents[a.Name].Floor = append(results.Agents[a.Name].Floor, run)
			}
		}
	}
	return nil
}
