package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Results is everything one run of the bench measured: the raw data the
// table and the chart are made from, written as JSON.
type Results struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Machine  Machine   `json:"machine"`
	Settings Settings  `json:"settings"`
	// Agents are keyed by agent name: nodelet, kubelet.
	Agents map[string]*AgentResults `json:"agents"`
}

// Machine says where the bench ran.
type Machine struct {
	CPUModel    string `json:"cpuModel"`
	CPUs        int    `json:"cpus"`
	MemoryBytes uint64 `json:"memoryBytes"`
	Kernel      string `json:"kernel"`
	OS          string `json:"os"`
	// Loads is the one-minute load average at the start of every run: the
	// machine may be shared.
	Loads []float64 `json:"loads"`
}

// Settings are the bench's fixed numbers of runs and sizes.
type Settings struct {
	SingleRuns int `json:"singleRuns"`
	InitRuns   int `json:"initRuns"`
	UserRuns   int `json:"userRuns"`
	ThreeRuns  int `json:"threeRuns"`
	// UserBursts and UserBurstRuns are the bursts of users' pods.
	UserBursts    []int       `json:"userBursts,omitempty"`
	UserBurstRuns map[int]int `json:"userBurstRuns,omitempty"`
	// FloorParallelism is how many pods at a time the burst floor started
	// (the fastest of the candidates the floor tried on this machine).
	FloorParallelism int           `json:"floorParallelism,omitempty"`
	Bursts           []int         `json:"bursts"`
	BurstRuns        map[int]int   `json:"burstRuns"`
	IdlePods         int           `json:"idlePods"`
	IdleRuns         int           `json:"idleRuns"`
	IdleFor          time.Duration `json:"idleForNanoseconds"`
	IdleSettle       time.Duration `json:"idleSettleNanoseconds"`
	FloorRuns        int           `json:"floorRuns"`
	// Image is the main containers' (pause), InitImage the init
	// containers' (busybox).
	Image       string `json:"image"`
	InitImage   string `json:"initImage"`
	ReadinessOn bool   `json:"readinessProbe"`
	// NodeCPUs are the CPUs the node (runtimes, shims, pods, agents) was
	// confined to, the control plane and the bench's client running on the
	// others; none when everything shared every CPU.
	NodeCPUs []int `json:"nodeCPUs,omitempty"`
}

// AgentResults are one agent's runs.
type AgentResults struct {
	Node           string `json:"node"`
	User           string `json:"user"`
	Version        string `json:"version"`
	RuntimeVersion string `json:"runtimeVersion"`

	Single []PodRun `json:"single"`
	Init   []PodRun `json:"init"`
	// UserPods is one users' pod at a time (userPod), ThreeContainers
	// one pod of three containers with a readiness probe (threeContainerPod).
	UserPods        []PodRun   `json:"userPods,omitempty"`
	ThreeContainers []PodRun   `json:"threeContainers,omitempty"`
	Bursts          []BurstRun `json:"bursts"`
	Idle            []IdleRun  `json:"idle"`
	// Floor is the runtime's own: no agent, straight through CRI on this
	// agent's containerd.
	Floor []FloorRun `json:"floor"`
	// BurstFloor is the runtime's own for each burst size: the same pods
	// straight through CRI, FloorParallelism at a time.
	BurstFloor []BurstFloorRun `json:"burstFloor,omitempty"`
}

// PodRun is one pod created, seen Ready, deleted and seen gone, alone.
type PodRun struct {
	Start time.Time `json:"start"`
	// ReadySeconds: creation request sent → Running and Ready seen.
	ReadySeconds float64 `json:"readySeconds"`
	// GoneSeconds: deletion request sent → deletion seen.
	GoneSeconds float64 `json:"goneSeconds"`
	// Requests the agent made from creation to deletion seen.
	Requests *requestCounts `json:"requests,omitempty"`
	// Steps is the agent's own account of the start, where its log gives
	// one (nodelet's "Pod started"): seconds per step, each after the step
	// before; StepOrder is the order they came in.
	Steps     map[string]float64 `json:"steps,omitempty"`
	StepOrder []string           `json:"stepOrder,omitempty"`
}

// BurstRun is Pods pods created at once, all seen Ready, deleted at once and
// all seen gone.
type BurstRun struct {
	// Workload is empty for the bench's pause pods, "user" for users'
	// pods (token, ConfigMap volume, env from a Secret, service links).
	Workload string    `json:"workload,omitempty"`
	Pods     int       `json:"pods"`
	Start    time.Time `json:"start"`
	// ReadySeconds per pod: its creation request sent → it seen Ready.
	ReadySeconds []float64 `json:"readySeconds"`
	// AllReadySeconds: first creation request sent → last pod seen Ready.
	AllReadySeconds float64 `json:"allReadySeconds"`
	// AllGoneSeconds: first deletion request sent → last pod seen gone.
	AllGoneSeconds float64 `json:"allGoneSeconds"`
	// Agent is the agent's use from the first creation to the last Ready.
	Agent procUsage `json:"agent"`
	// MachineCPUSeconds is what the whole machine used in that time,
	// NodeCPUSeconds what the node's CPUs used (Settings.NodeCPUs).
	MachineCPUSeconds float64 `json:"machineCPUSeconds,omitempty"`
	NodeCPUSeconds    float64 `json:"nodeCPUSeconds,omitempty"`
	// ContainerdCPUSeconds is what the agent's containerd used in that
	// time (its own process: its shims not counted).
	ContainerdCPUSeconds float64 `json:"containerdCPUSeconds,omitempty"`
	// AgentDeleting is its use from the first deletion to the last gone.
	AgentDeleting procUsage `json:"agentDeleting"`
	// Requests the agent made from the first creation to the last gone.
	Requests *requestCounts `json:"requests,omitempty"`
}

// IdleRun is a stretch with Pods pods running and nothing else happening.
type IdleRun struct {
	Pods    int       `json:"pods"`
	Seconds float64   `json:"seconds"`
	Agent   procUsage `json:"agent"`
	// Containerd is the runtime daemon's own use (its shims not counted).
	Containerd  procUsage          `json:"containerd"`
	CRICalls    float64            `json:"criCalls"`
	CRIByMethod map[string]float64 `json:"criByMethod"`
	Requests    *requestCounts     `json:"requests,omitempty"`
}

// FloorRun is one pod started straight through CRI: RunPodSandbox (with its
// CNI ADD), CreateContainer and StartContainer.
type FloorRun struct {
	Seconds        float64 `json:"seconds"`
	SandboxSeconds float64 `json:"sandboxSeconds"`
	CreateSeconds  float64 `json:"createSeconds"`
	StartSeconds   float64 `json:"startSeconds"`
}

// BurstFloorRun is Pods pods started straight through CRI, Parallelism at a
// time, as FloorRun each: first call sent → last container started.
type BurstFloorRun struct {
	// Workload is that of the bursts it is the floor of (BurstRun's).
	Workload    string  `json:"workload,omitempty"`
	Pods        int     `json:"pods"`
	Parallelism int     `json:"parallelism"`
	Seconds     float64 `json:"seconds"`
	// MachineCPUSeconds is what the whole machine used in those seconds,
	// NodeCPUSeconds what the node's CPUs used (Settings.NodeCPUs).
	MachineCPUSeconds float64 `json:"machineCPUSeconds,omitempty"`
	NodeCPUSeconds    float64 `json:"nodeCPUSeconds,omitempty"`
	// ContainerdCPUSeconds is what the containerd used (its shims not
	// counted).
	ContainerdCPUSeconds float64 `json:"containerdCPUSeconds,omitempty"`
}

func readResults(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	var results Results
	if err := json.Unmarshal(data, &results); err != nil {
		return nil, fmt.Errorf("reading results %s: %w", path, err)
	}
	return &results, nil
}

func writeResults(path string, results *Results) error {
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	return nil
}
