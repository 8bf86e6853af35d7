package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// scaleFlags are the scale subcommand's settings.
type scaleFlags struct {
	agent         string
	kubeconfig    string
	stateDir      string
	nodes         int
	podsPerNode   int
	baseline      time.Duration
	idle          time.Duration
	timeout       time.Duration
	hollowNodelet string
	kubemark      string
	image         string
	out           string
}

// ScaleResult is one agent's run of `bench scale`: totals over all its
// nodes; the report divides by the number of nodes.
type ScaleResult struct {
	Agent       string    `json:"agent"`
	Version     string    `json:"version"`
	Nodes       int       `json:"nodes"`
	PodsPerNode int       `json:"podsPerNode"`
	Started     time.Time `json:"started"`
	Machine     Machine   `json:"machine"`
	LoadStart   float64   `json:"load1Start"`
	LoadEnd     float64   `json:"load1End"`
	// AgentProcesses is how many processes ran the nodes.
	AgentProcesses int `json:"agentProcesses"`
	// NodesReadySeconds is from the agents' start to every Node Ready.
	NodesReadySeconds float64 `json:"nodesReadySeconds"`
	// Baseline is the control plane alone, before the agents start.
	Baseline scaleWindow `json:"baseline"`
	// Idle is every node up with nothing to run.
	Idle scaleWindow `json:"idle"`
	// Churn is from the burst's creation to its last pod gone.
	Churn scaleWindow `json:"churn"`
	// RunningSeconds is from the Deployment's creation to all its pods
	// Running; GoneSeconds from its scale to zero to all pods gone.
	RunningSeconds float64 `json:"runningSeconds"`
	GoneSeconds    float64 `json:"goneSeconds"`
	// Watches are the watches the agents held at the end of the idle
	// window, by resource: apiserver_longrunning_requests{verb="WATCH"}
	// less the baseline's.
	Watches map[string]float64 `json:"watches"`
	// AgentRSSBytes is the agents' resident memory at the end of the idle
	// window and at the burst's peak (all pods Running).
	AgentRSSIdleBytes    uint64 `json:"agentRSSIdleBytes"`
	AgentRSSRunningBytes uint64 `json:"agentRSSRunningBytes"`
}

// scaleWindow is what the control plane and the agents did in a window.
type scaleWindow struct {
	Seconds             float64        `json:"seconds"`
	Requests            *requestCounts `json:"requests"`
	NodeUsers           int            `json:"nodeUsers"`
	APIServerCPUSeconds float64        `json:"apiserverCPUSeconds"`
	EtcdCPUSeconds      float64        `json:"etcdCPUSeconds"`
	AgentCPUSeconds     float64        `json:"agentCPUSeconds"`
	BytesReceived       int64          `json:"bytesReceived"`
	BytesSent           int64          `json:"bytesSent"`
	start, end          time.Time
}

// scaleRun holds what one run measures with.
type scaleRun struct {
	f         scaleFlags
	client    kubernetes.Interface
	proxy     *countingProxy
	procs     *agentProcs
	apiserver int
	etcd      int
}

// windowMeter measures one window.
type windowMeter struct {
	run                     *scaleRun
	start                   time.Time
	apiserver, etcd, agents float64
	received, sent          int64
}

func (r *scaleRun) startWindow() (*windowMeter, error) {
	m := &windowMeter{run: r, start: time.Now()}
	var err error
	if m.apiserver, err = cpuSeconds(r.apiserver); err != nil {
		return nil, err
	}
	if m.etcd, err = cpuSeconds(r.etcd); err != nil {
		return nil, err
	}
	if m.agents, err = cpuOf(r.procs.pids()); err != nil {
		return nil, err
	}
	m.received, m.sent = r.proxy.received.Load(), r.proxy.sent.Load()
	return m, nil
}

func (m *windowMeter) stop() (scaleWindow, error) {
	end := time.Now()
	w := scaleWindow{Seconds: end.Sub(m.start).Seconds(), start: m.start, end: end}
	apiserver, err := cpuSeconds(m.run.apiserver)
	if err != nil {
		return w, err
	}
	etcd, err := cpuSeconds(m.run.etcd)
	if err != nil {
		return w, err
	}
	agents, err := cpuOf(m.run.procs.pids())
	if err != nil {
		return w, err
	}
	w.APIServerCPUSeconds, w.EtcdCPUSeconds, w.AgentCPUSeconds = apiserver-m.apiserver, etcd-m.etcd, agents-m.agents
	w.BytesReceived = m.run.proxy.received.Load() - m.received
	w.BytesSent = m.run.proxy.sent.Load() - m.sent
	return w, nil
}

func runScale(ctx context.Context, args []string) error {
	var f scaleFlags
	flags := flag.NewFlagSet("scale", flag.ExitOnError)
	flags.StringVar(&f.agent, "agent", "", "nodelet (hollow-nodelet, all nodes in one process) or kubelet (kubemark, one process per node)")
	flags.StringVar(&f.kubeconfig, "kubeconfig", "", "the stack's admin kubeconfig")
	flags.StringVar(&f.stateDir, "state-dir", "", "the stack's state folder (pki/, logs/audit.log, run/*.pid); the nodes' files go to scale/ in it")
	flags.IntVar(&f.nodes, "nodes", 100, "hollow nodes")
	flags.IntVar(&f.podsPerNode, "pods-per-node", 30, "pods of the burst per node")
	flags.DurationVar(&f.baseline, "baseline", 30*time.Second, "window measuring the control plane alone")
	flags.DurationVar(&f.idle, "idle", 2*time.Minute, "window measuring the nodes idle")
	flags.DurationVar(&f.timeout, "timeout", 10*time.Minute, "how long the nodes may take to be Ready, and the burst to run or go")
	flags.StringVar(&f.hollowNodelet, "hollow-nodelet", "", "the hollow-nodelet binary")
	flags.StringVar(&f.kubemark, "kubemark", "", "the kubemark binary")
	flags.StringVar(&f.image, "image", "registry.k8s.io/pause:3.10", "the burst's image (never pulled: the runtimes are fakes)")
	flags.StringVar(&f.out, "out", "", "the result's JSON file")
	_ = flags.Parse(args)
	if f.agent != "nodelet" && f.agent != "kubelet" || f.kubeconfig == "" || f.stateDir == "" || f.out == "" {
		return errors.New("scale: -agent nodelet|kubelet, -kubeconfig, -state-dir and -out are required")
	}
	result, err := scale(ctx, f)
	if result != nil {
		data, jerr := json.MarshalIndent(result, "", "  ")
		if jerr != nil {
			return jerr
		}
		if werr := os.WriteFile(f.out, append(data, '\n'), 0o644); werr != nil {
			return werr
		}
	}
	return err
}

func scale(ctx context.Context, f scaleFlags) (*ScaleResult, error) {
	config, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return nil, err
	}
	config.QPS, config.Burst = 100, 200
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	server, err := url.Parse(config.Host)
	if err != nil {
		return nil, err
	}
	r := &scaleRun{f: f, client: client, procs: &agentProcs{}}
	if r.apiserver, err = readPIDFile(filepath.Join(f.stateDir, "run", "kube-apiserver.pid")); err != nil {
		return nil, err
	}
	if r.etcd, err = readPIDFile(filepath.Join(f.stateDir, "run", "etcd.pid")); err != nil {
		return nil, err
	}
	if r.proxy, err = startCountingProxy(server.Host); err != nil {
		return nil, err
	}
	defer r.proxy.close()
	defer r.procs.stop(30 * time.Second)

	result := &ScaleResult{Agent: f.agent, Nodes: f.nodes, PodsPerNode: f.podsPerNode, Started: time.Now(), Machine: describeMachine(), LoadStart: loadAverage()}
	names := make([]string, f.nodes)
	for i := range names {
		names[i] = fmt.Sprintf("hollow-%s-%03d", f.agent, i)
	}
	dir := filepath.Join(f.stateDir, "scale")
	kubeconfigs := filepath.Join(dir, "kubeconfigs")
	log.Printf("%s: writing %d node identities", f.agent, f.nodes)
	if err := nodeIdentities(filepath.Join(f.stateDir, "pki"), kubeconfigs, "https://"+r.proxy.addr(), names); err != nil {
		return nil, err
	}
	watchesBefore, err := watchesHeld(ctx, client)
	if err != nil {
		return nil, err
	}
	log.Printf("%s: the control plane alone for %s", f.agent, f.baseline)
	meter, err := r.startWindow()
	if err != nil {
		return nil, err
	}
	if err := sleep(ctx, f.baseline); err != nil {
		return nil, err
	}
	if result.Baseline, err = meter.stop(); err != nil {
		return nil, err
	}

	log.Printf("%s: starting %d hollow nodes", f.agent, f.nodes)
	started := time.Now()
	if err := r.startAgents(dir, kubeconfigs, names); err != nil {
		return result, err
	}
	result.AgentProcesses = len(r.procs.cmds)
	if err := r.waitNodesReady(ctx, names); err != nil {
		return result, err
	}
	result.NodesReadySeconds = time.Since(started).Seconds()
	result.Version = r.nodeVersion(ctx, names[0])
	log.Printf("%s: %d nodes Ready in %.1fs; idle for %s", f.agent, f.nodes, result.NodesReadySeconds, f.idle)
	// The nodes' first status reports and lease creations are behind.
	if err := sleep(ctx, 15*time.Second); err != nil {
		return result, err
	}
	if meter, err = r.startWindow(); err != nil {
		return result, err
	}
	if err := sleep(ctx, f.idle); err != nil {
		return result, err
	}
	if result.Idle, err = meter.stop(); err != nil {
		return result, err
	}
	watchesAfter, err := watchesHeld(ctx, client)
	if err != nil {
		return result, err
	}
	result.Watches = map[string]float64{}
	for resource, n := range watchesAfter {
		if d := n - watchesBefore[resource]; d > 0 {
			result.Watches[resource] = d
		}
	}
	if result.AgentRSSIdleBytes, err = rssOf(r.procs.pids()); err != nil {
		return result, err
	}

	if err := r.burst(ctx, result); err != nil {
		return result, err
	}
	result.LoadEnd = loadAverage()

	auditLog := filepath.Join(f.stateDir, "logs", "audit.log")
	log.Printf("%s: counting the nodes' requests in %s", f.agent, auditLog)
	windows := []*scaleWindow{&result.Baseline, &result.Idle, &result.Churn}
	if err := countNodeRequests(auditLog, "system:node:hollow-"+f.agent+"-", windows); err != nil {
		return result, err
	}
	return result, nil
}

func (r *scaleRun) startAgents(dir, kubeconfigs string, names []string) error {
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	// The capacity kubemark's hollow kubelet reports (its fake cAdvisor):
	// one CPU, 3.75 GiB; both agents' default 110 pods.
	if r.f.agent == "nodelet" {
		return r.procs.start(filepath.Join(logs, "hollow-nodelet.log"), nil, r.f.hollowNodelet,
			"--kubeconfig-dir="+kubeconfigs, "--state-dir="+filepath.Join(dir, "nodes"),
			"--cpu=1", "--memory=4026531840", "--max-pods=110",
			// As a cluster's nodes have (no DNS answers there: the pods
			// are hollow); without it every pod gets two warning events.
			"--cluster-dns=10.96.0.10", "--cluster-domain=cluster.local")
	}
	tmp := filepath.Join(dir, "kubemark-tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := r.procs.leaveNothing(kubemarkLeftovers...); err != nil {
		return err
	}
	// Each hollow kubelet serves the kubelet's API on a port of its own:
	// free ones below the kernel's ephemeral range (32768 on), where the
	// nodes' own connections could take one between the check and the
	// bind.
	port := 31000
	for _, name := range names {
		for !portFree(port) {
			port++
		}
		if err := r.procs.start(filepath.Join(logs, name+".log"), []string{"TMPDIR=" + tmp}, r.f.kubemark,
			"--morph=kubelet", "--name="+name, "--kubeconfig="+filepath.Join(kubeconfigs, name+".kubeconfig"),
			fmt.Sprintf("--kubelet-port=%d", port), "--kubelet-read-only-port=0",
			"--use-host-image-service=false", "--max-pods=110"); err != nil {
			return err
		}
		port++
	}
	return nil
}

// kubemarkLeftovers are what each hollow kubelet leaves in /tmp: its root
// folder and its fake runtime's socket, both at fixed places in the
// kubernetes module.
var kubemarkLeftovers = []string{"/tmp/hollow-kubelet.*", "/tmp/kubelet_remote_*.sock"}

func portFree(port int) bool {
	listener, err := net.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", port))
	if err != nil {
		return false
	}
	_ = listener.Close()
	return true
}

func (r *scaleRun) waitNodesReady(ctx context.Context, names []string) error {
	want := map[string]bool{}
	for _, name := range names {
		want[name] = true
	}
	var ready int
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, r.f.timeout, true, func(ctx context.Context) (bool, error) {
		if err := r.procs.alive(); err != nil {
			return false, err
		}
		nodes, err := r.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready = 0
		for _, node := range nodes.Items {
			if want[node.Name] && nodeReady(&node) {
				ready++
			}
		}
		return ready == len(names), nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d nodes Ready: %w", ready, len(names), err)
	}
	return nil
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (r *scaleRun) nodeVersion(ctx context.Context, name string) string {
	node, err := r.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return node.Status.NodeInfo.KubeletVersion
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
