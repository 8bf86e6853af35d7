package podstatus

// Tests of pod status generation. Pure: plain Pods and runtime records in,
// statuses out; no runtime, no API server, no clock.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at is a time epoch+seconds, with sub-second parts as the runtime reports them.
func at(seconds float64) time.Time {
	return epoch.Add(time.Duration(seconds * float64(time.Second)))
}

// sec is at(seconds) as the API keeps it: to the second.
func sec(seconds float64) metav1.Time {
	return metav1.NewTime(at(seconds).Truncate(time.Second))
}

const testNow = 30.7

// basePod is a Pod just scheduled to the node: two init containers, two
// containers, restartPolicy Always. Its containers are listed web, metrics:
// the kubelet reports regular containers sorted by name.
func basePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "uid-1", Generation: 2},
		Spec: corev1.PodSpec{
			NodeName:      "node-a",
			RestartPolicy: corev1.RestartPolicyAlways,
			InitContainers: []corev1.Container{
				{Name: "migrate", Image: "migrate:1"},
				{Name: "warm-cache", Image: "warm-cache:1"},
			},
			Containers: []corev1.Container{
				{
					Name:         "web",
					Image:        "web:1",
					VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web", ReadOnly: true}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
					},
				},
				{Name: "metrics", Image: "metrics:1"},
			},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			QOSClass:   corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: sec(0)}},
		},
	}
}

// baseRuntime is the runtime's record of basePod fully started: a ready
// sandbox, both init containers done, both containers running.
func baseRuntime() *kubecontainer.PodStatus {
	return &kubecontainer.PodStatus{
		UID: "uid-1", Name: "web-0", Namespace: "shop",
		Sandboxes: []*kubecontainer.SandboxStatus{
			{ID: "sb-1", State: kubecontainer.SandboxReady, CreatedAt: at(1.2), IPs: []string{"10.244.1.7"}},
		},
		Containers: []*kubecontainer.ContainerStatus{
			runningInstance("web", "web-1", 0, 6.1),
			runningInstance("metrics", "metrics-1", 0, 6.0),
			exitedInstance("warm-cache", "warm-cache-1", 0, 0, 4.1),
			exitedInstance("migrate", "migrate-1", 0, 0, 2.1),
		},
	}
}

func runningInstance(name, id string, restarts int, created float64) *kubecontainer.ContainerStatus {
	return &kubecontainer.ContainerStatus{
		ID:           kubecontainer.ContainerID{Type: "containerd", ID: id},
		Name:         name,
		SandboxID:    "sb-1",
		State:        kubecontainer.ContainerRunning,
		CreatedAt:    at(created),
		StartedAt:    at(created + 0.3),
		Image:        "docker.io/library/" + name + ":1",
		ImageRef:     "docker.io/library/" + name + "@sha256:" + name,
		RestartCount: restarts,
	}
}

// exitedInstance ran from created+0.3 to created+1.5.
func exitedInstance(name, id string, restarts int, exitCode int32, created float64) *kubecontainer.ContainerStatus {
	c := runningInstance(name, id, restarts, created)
	c.State = kubecontainer.ContainerExited
	c.FinishedAt = at(created + 1.5)
	c.ExitCode = exitCode
	c.Reason = "Completed"
	if exitCode != 0 {
		c.Reason = "Error"
	}
	return c
}

// Expected statuses, in the kubelet's shape.

func webResources() *corev1.ResourceRequirements {
	return &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
}

func webMounts() []corev1.VolumeMountStatus {
	disabled := corev1.RecursiveReadOnlyDisabled
	return []corev1.VolumeMountStatus{{Name: "config", MountPath: "/etc/web", ReadOnly: true, RecursiveReadOnly: &disabled}}
}

// wantInstance is the part of a container's status that comes from its
// newest runtime instance.
func wantInstance(name, id string, restarts int32) corev1.ContainerStatus {
	s := corev1.ContainerStatus{
		Name:         name,
		Image:        "docker.io/library/" + name + ":1",
		ImageID:      "docker.io/library/" + name + "@sha256:" + name,
		ContainerID:  "containerd://" + id,
		RestartCount: restarts,
		Started:      ptr.To(false),
		Resources:    &corev1.ResourceRequirements{},
	}
	if name == "web" {
		s.VolumeMounts = webMounts()
		s.Resources = webResources()
		s.AllocatedResources = webResources().Requests
	}
	return s
}

func wantRunning(name, id string, restarts int32, created float64) corev1.ContainerStatus {
	s := wantInstance(name, id, restarts)
	s.State = runningState(created)
	s.Ready, s.Started = true, ptr.To(true)
	return s
}

func wantExited(name, id string, restarts, exitCode int32, created float64) corev1.ContainerStatus {
	s := wantInstance(name, id, restarts)
	s.State = terminatedState(id, exitCode, created)
	return s
}

func wantInitDone(name, id string, created float64) corev1.ContainerStatus {
	s := wantExited(name, id, 0, 0, created)
	s.Ready = true
	return s
}

// wantWaiting is a container with no instance in the runtime.
func wantWaiting(name, reason, message string) corev1.ContainerStatus {
	s := corev1.ContainerStatus{
		Name:    name,
		Image:   name + ":1",
		State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
		Started: ptr.To(false),
	}
	if name == "web" {
		s.VolumeMounts = webMounts()
	}
	return s
}

func runningState(created float64) corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: sec(created + 0.3)}}
}

func terminatedState(id string, exitCode int32, created float64) corev1.ContainerState {
	reason := "Completed"
	if exitCode != 0 {
		reason = "Error"
	}
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode:    exitCode,
		Reason:      reason,
		StartedAt:   sec(created + 0.3),
		FinishedAt:  sec(created + 1.5),
		ContainerID: "containerd://" + id,
	}}
}

func cond(t corev1.PodConditionType, status corev1.ConditionStatus, reason, message string, transition metav1.Time) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: 2, LastTransitionTime: transition}
}

// wantConditions are nodelet's conditions in the kubelet's order, all
// turned to their status now except PodScheduled, True since epoch.
func wantConditions(readyToStart, initialized, ready, containersReady corev1.PodCondition) []corev1.PodCondition {
	return []corev1.PodCondition{readyToStart, initialized, ready, containersReady, cond(corev1.PodScheduled, corev1.ConditionTrue, "", "", sec(0))}
}

var (
	now          = sec(testNow)
	readyToStart = cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", "", now)
	initialized  = cond(corev1.PodInitialized, corev1.ConditionTrue, "", "", now)
	podReady     = cond(corev1.PodReady, corev1.ConditionTrue, "", "", now)
	allReady     = cond(corev1.ContainersReady, corev1.ConditionTrue, "", "", now)
)

func notReady(t corev1.PodConditionType, reason, message string) corev1.PodCondition {
	return cond(t, corev1.ConditionFalse, reason, message, now)
}

// wantStatus fills in what every expected status of basePod shares.
func wantStatus(phase corev1.PodPhase, conditions []corev1.PodCondition, initStatuses, statuses []corev1.ContainerStatus) corev1.PodStatus {
	return corev1.PodStatus{
		ObservedGeneration:    2,
		Phase:                 phase,
		Conditions:            conditions,
		HostIP:                "192.168.0.10",
		HostIPs:               []corev1.HostIP{{IP: "192.168.0.10"}},
		PodIP:                 "10.244.1.7",
		PodIPs:                []corev1.PodIP{{IP: "10.244.1.7"}},
		StartTime:             &now,
		InitContainerStatuses: initStatuses,
		ContainerStatuses:     statuses,
		QOSClass:              corev1.PodQOSBurstable,
		Resources:             webResources(),
		AllocatedResources:    webResources().Requests,
	}
}

func initsDone() []corev1.ContainerStatus {
	return []corev1.ContainerStatus{wantInitDone("migrate", "migrate-1", 2.1), wantInitDone("warm-cache", "warm-cache-1", 4.1)}
}

func TestGeneratePodStatus(t *testing.T) {
	crashLoop := &kubecontainer.ContainerError{
		Reason:  kubecontainer.ReasonCrashLoopBackOff,
		Message: "back-off 20s restarting failed container=web pod=web-0_shop(uid-1)",
	}
	imagePull := &kubecontainer.ContainerError{
		Reason:  kubecontainer.ReasonErrImagePull,
		Message: `failed to pull and unpack image "docker.io/library/web:1": not found`,
	}
	uninitialized := notReady(corev1.PodInitialized, "ContainersNotInitialized", "containers with incomplete status: [migrate warm-cache]")

	tests := map[string]struct {
		pod     func(*corev1.Pod)
		runtime func(*kubecontainer.PodStatus)
		input   func(*Input)
		want    corev1.PodStatus
	}{
		"a pod with nothing created yet is pending, every container waiting for the init containers": {
			runtime: func(rt *kubecontainer.PodStatus) { rt.Sandboxes, rt.Containers = nil, nil },
			want: func() corev1.PodStatus {
				s := wantStatus(corev1.PodPending,
					wantConditions(
						notReady(corev1.PodReadyToStartContainers, "", ""),
						uninitialized,
						notReady(corev1.PodReady, "ContainersNotReady", "containers with unready status: [web metrics]"),
						notReady(corev1.ContainersReady, "ContainersNotReady", "containers with unready status: [web metrics]"),
					),
					[]corev1.ContainerStatus{wantWaiting("migrate", "PodInitializing", ""), wantWaiting("warm-cache", "PodInitializing", "")},
					[]corev1.ContainerStatus{wantWaiting("metrics", "PodInitializing", ""), wantWaiting("web", "PodInitializing", "")},
				)
				s.PodIP, s.PodIPs = "", nil
				return s
			}(),
		},
		"a pod whose sandbox is ready and first init container runs is pending and ready to start containers": {
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Containers = []*kubecontainer.ContainerStatus{runningInstance("migrate", "migrate-1", 0, 2.1)}
			},
			want: wantStatus(corev1.PodPending,
				wantConditions(
					readyToStart,
					uninitialized,
					notReady(corev1.PodReady, "ContainersNotReady", "containers with unready status: [web metrics]"),
					notReady(corev1.ContainersReady, "ContainersNotReady", "containers with unready status: [web metrics]"),
				),
				[]corev1.ContainerStatus{
					func() corev1.ContainerStatus {
						s := wantRunning("migrate", "migrate-1", 0, 2.1)
						s.Ready = false // an init container is ready once it succeeded
						return s
					}(),
					wantWaiting("warm-cache", "PodInitializing", ""),
				},
				[]corev1.ContainerStatus{wantWaiting("metrics", "PodInitializing", ""), wantWaiting("web", "PodInitializing", "")},
			),
		},
		"a pod whose first init container failed under restartPolicy Never has failed": {
			pod: func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Containers = []*kubecontainer.ContainerStatus{exitedInstance("migrate", "migrate-1", 0, 1, 2.1)}
			},
			want: wantStatus(corev1.PodFailed,
				wantConditions(
					readyToStart,
					uninitialized,
					notReady(corev1.PodReady, "PodFailed", ""),
					notReady(corev1.ContainersReady, "PodFailed", ""),
				),
				[]corev1.ContainerStatus{wantExited("migrate", "migrate-1", 0, 1, 2.1), wantWaiting("warm-cache", "PodInitializing", "")},
				[]corev1.ContainerStatus{wantWaiting("metrics", "PodInitializing", ""), wantWaiting("web", "PodInitializing", "")},
			),
		},
		"a pod whose containers all run is running and ready": {
			want: wantStatus(corev1.PodRunning,
				wantConditions(readyToStart, initialized, podReady, allReady),
				initsDone(),
				[]corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 0, 6.0), wantRunning("web", "web-1", 0, 6.1)},
			),
		},
		"a container that exited 1 under Always and waits in crash-loop back-off shows its last run and makes the pod unready": {
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Containers = []*kubecontainer.ContainerStatus{
					exitedInstance("web", "web-3", 2, 1, 20.0),
					exitedInstance("web", "web-2", 1, 1, 10.0),
					runningInstance("metrics", "metrics-1", 0, 6.0),
					exitedInstance("web", "web-1", 0, 1, 6.1),
					exitedInstance("warm-cache", "warm-cache-1", 0, 0, 4.1),
					exitedInstance("migrate", "migrate-1", 0, 0, 2.1),
				}
			},
			input: func(in *Input) { in.Waiting = map[string]*kubecontainer.ContainerError{"web": crashLoop} },
			want: wantStatus(corev1.PodRunning,
				wantConditions(
					readyToStart,
					initialized,
					notReady(corev1.PodReady, "ContainersNotReady", "containers with unready status: [web]"),
					notReady(corev1.ContainersReady, "ContainersNotReady", "containers with unready status: [web]"),
				),
				initsDone(),
				[]corev1.ContainerStatus{
					wantRunning("metrics", "metrics-1", 0, 6.0),
					func() corev1.ContainerStatus {
						s := wantInstance("web", "web-3", 2)
						s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: crashLoop.Message}}
						s.LastTerminationState = terminatedState("web-3", 1, 20.0)
						return s
					}(),
				},
			),
		},
		"a container that exited and has no waiting reason yet shows how it ended, its previous run as last state": {
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Containers = append([]*kubecontainer.ContainerStatus{exitedInstance("web", "web-2", 1, 2, 20.0)}, rt.Containers...)
				rt.Containers[1] = exitedInstance("web", "web-1", 0, 1, 6.1)
			},
			want: wantStatus(corev1.PodRunning,
				wantConditions(
					readyToStart,
					initialized,
					notReady(corev1.PodReady, "ContainersNotReady", "containers with unready status: [web]"),
					notReady(corev1.ContainersReady, "ContainersNotReady", "containers with unready status: [web]"),
				),
				initsDone(),
				[]corev1.ContainerStatus{
					wantRunning("metrics", "metrics-1", 0, 6.0),
					func() corev1.ContainerStatus {
						s := wantExited("web", "web-2", 1, 2, 20.0)
						s.LastTerminationState = terminatedState("web-1", 1, 6.1)
						return s
					}(),
				},
			),
		},
		"a pod whose containers all exited 0 under Never has succeeded and is not ready": {
			pod: func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Containers[0] = exitedInstance("web", "web-1", 0, 0, 6.1)
				rt.Containers[1] = exitedInstance("metrics", "metrics-1", 0, 0, 6.0)
			},
			want: wantStatus(corev1.PodSucceeded,
				wantConditions(
					readyToStart,
					cond(corev1.PodInitialized, corev1.ConditionTrue, "PodCompleted", "", now),
					notReady(corev1.PodReady, "PodCompleted", ""),
					notReady(corev1.ContainersReady, "PodCompleted", ""),
				),
				initsDone(),
				[]corev1.ContainerStatus{wantExited("metrics", "metrics-1", 0, 0, 6.0), wantExited("web", "web-1", 0, 0, 6.1)},
			),
		},
		"a deleted pod whose containers were stopped with exit code 143 has failed and keeps its IP": {
			pod: func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr.To(sec(25))
				p.Status.Phase = corev1.PodRunning
				p.Status.PodIP, p.Status.PodIPs = "10.244.1.7", []corev1.PodIP{{IP: "10.244.1.7"}}
			},
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Sandboxes[0].State = kubecontainer.SandboxNotReady
				rt.Containers[0] = exitedInstance("web", "web-1", 0, 143, 6.1)
				rt.Containers[1] = exitedInstance("metrics", "metrics-1", 0, 143, 6.0)
			},
			input: func(in *Input) {
				in.Terminal = true
				// Reasons are not shown on a deleted pod's containers.
				in.Waiting = map[string]*kubecontainer.ContainerError{"web": crashLoop}
			},
			want: wantStatus(corev1.PodFailed,
				wantConditions(
					notReady(corev1.PodReadyToStartContainers, "", ""),
					initialized,
					notReady(corev1.PodReady, "PodFailed", ""),
					notReady(corev1.ContainersReady, "PodFailed", ""),
				),
				initsDone(),
				[]corev1.ContainerStatus{wantExited("metrics", "metrics-1", 0, 143, 6.0), wantExited("web", "web-1", 0, 143, 6.1)},
			),
		},
		"a terminal pod whose container never started reports it killed": {
			pod: func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(sec(25)) },
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Sandboxes[0].State = kubecontainer.SandboxNotReady
				rt.Containers = rt.Containers[1:]
				rt.Containers[0] = exitedInstance("metrics", "metrics-1", 0, 0, 6.0)
			},
			input: func(in *Input) { in.Terminal = true },
			want: func() corev1.PodStatus {
				s := wantStatus(corev1.PodFailed,
					wantConditions(
						notReady(corev1.PodReadyToStartContainers, "", ""),
						initialized,
						notReady(corev1.PodReady, "PodFailed", ""),
						notReady(corev1.ContainersReady, "PodFailed", ""),
					),
					initsDone(),
					[]corev1.ContainerStatus{
						wantExited("metrics", "metrics-1", 0, 0, 6.0),
						func() corev1.ContainerStatus {
							s := wantWaiting("web", "", "")
							s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
								ExitCode: 137,
								Reason:   "ContainerStatusUnknown",
								Message:  "The container could not be located when the pod was terminated",
							}}
							return s
						}(),
					},
				)
				s.PodIP, s.PodIPs = "", nil
				return s
			}(),
		},
		"a container whose image cannot be pulled waits with ErrImagePull": {
			runtime: func(rt *kubecontainer.PodStatus) { rt.Containers = rt.Containers[1:] },
			input:   func(in *Input) { in.Waiting = map[string]*kubecontainer.ContainerError{"web": imagePull} },
			want: wantStatus(corev1.PodPending,
				wantConditions(
					readyToStart,
					initialized,
					notReady(corev1.PodReady, "ContainersNotReady", "containers with unready status: [web]"),
					notReady(corev1.ContainersReady, "ContainersNotReady", "containers with unready status: [web]"),
				),
				initsDone(),
				[]corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 0, 6.0), wantWaiting("web", "ErrImagePull", imagePull.Message)},
			),
		},
		"a container created but not started shows its start failure": {
			runtime: func(rt *kubecontainer.PodStatus) { rt.Containers[0].State = kubecontainer.ContainerCreated },
			input: func(in *Input) {
				in.Waiting = map[string]*kubecontainer.ContainerError{"web": {Reason: "RunContainerError", Message: `exec: "web": executable file not found in $PATH`}}
			},
			want: wantStatus(corev1.PodPending,
				wantConditions(
					readyToStart,
					initialized,
					notReady(corev1.PodReady, "ContainersNotReady", "containers with unready status: [web]"),
					notReady(corev1.ContainersReady, "ContainersNotReady", "containers with unready status: [web]"),
				),
				initsDone(),
				[]corev1.ContainerStatus{
					wantRunning("metrics", "metrics-1", 0, 6.0),
					func() corev1.ContainerStatus {
						s := wantInstance("web", "web-1", 0)
						s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "RunContainerError", Message: `exec: "web": executable file not found in $PATH`}
						return s
					}(),
				},
			),
		},
		"a readiness gate without its condition keeps the pod unready while its containers are ready": {
			pod: func(p *corev1.Pod) {
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "example.com/dns", Status: corev1.ConditionFalse})
			},
			want: wantStatus(corev1.PodRunning,
				append([]corev1.PodCondition{{Type: "example.com/dns", Status: corev1.ConditionFalse}},
					wantConditions(
						readyToStart,
						initialized,
						notReady(corev1.PodReady, "ReadinessGatesNotReady",
							`corresponding condition of pod readiness gate "example.com/lb" does not exist., the status of pod readiness gate "example.com/dns" is not "True", but False`),
						allReady,
					)...),
				initsDone(),
				[]corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 0, 6.0), wantRunning("web", "web-1", 0, 6.1)},
			),
		},
		"conditions others own are kept first as they are, DisruptionTarget included": {
			pod: func(p *corev1.Pod) {
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
				p.Status.Conditions = []corev1.PodCondition{
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: sec(20)},
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: sec(0)},
					{Type: "example.com/lb", Status: corev1.ConditionTrue, LastTransitionTime: sec(9)},
				}
			},
			want: wantStatus(corev1.PodRunning,
				append([]corev1.PodCondition{
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: sec(20)},
					{Type: "example.com/lb", Status: corev1.ConditionTrue, LastTransitionTime: sec(9)},
				}, wantConditions(readyToStart, initialized, podReady, allReady)...),
				initsDone(),
				[]corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 0, 6.0), wantRunning("web", "web-1", 0, 6.1)},
			),
		},
		"a condition keeps its lastTransitionTime while its status is unchanged": {
			pod: func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{
					cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", "", sec(2)),
					cond(corev1.PodInitialized, corev1.ConditionTrue, "", "", sec(5)),
					cond(corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [web]", sec(5)),
					cond(corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [web]", sec(5)),
					cond(corev1.PodScheduled, corev1.ConditionTrue, "", "", sec(0)),
				}
			},
			want: wantStatus(corev1.PodRunning,
				wantConditions(
					cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", "", sec(2)),
					cond(corev1.PodInitialized, corev1.ConditionTrue, "", "", sec(5)),
					podReady,
					allReady,
				),
				initsDone(),
				[]corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 0, 6.0), wantRunning("web", "web-1", 0, 6.1)},
			),
		},
		"a container the API showed running that the runtime no longer has is reported gone, one restart more": {
			pod: func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 3, 6.0), wantRunning("web", "web-1", 0, 6.1)}
			},
			runtime: func(rt *kubecontainer.PodStatus) { rt.Containers = append(rt.Containers[:1], rt.Containers[2:]...) },
			want: wantStatus(corev1.PodRunning,
				wantConditions(
					readyToStart,
					initialized,
					notReady(corev1.PodReady, "ContainersNotReady", "containers with unready status: [metrics]"),
					notReady(corev1.ContainersReady, "ContainersNotReady", "containers with unready status: [metrics]"),
				),
				initsDone(),
				[]corev1.ContainerStatus{
					func() corev1.ContainerStatus {
						s := wantWaiting("metrics", "PodInitializing", "")
						s.RestartCount = 4
						s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
							ExitCode: 137,
							Reason:   "ContainerStatusUnknown",
							Message:  "The container could not be located when the pod was deleted.  The container used to be Running",
						}
						return s
					}(),
					wantRunning("web", "web-1", 0, 6.1),
				},
			),
		},
		"a container the runtime lost track of after it ran is reported terminated": {
			pod: func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 0, 6.0), wantRunning("web", "web-1", 0, 6.1)}
			},
			runtime: func(rt *kubecontainer.PodStatus) { rt.Containers[0].State = kubecontainer.ContainerUnknown },
			want: wantStatus(corev1.PodRunning,
				wantConditions(
					readyToStart,
					initialized,
					notReady(corev1.PodReady, "ContainersNotReady", "containers with unready status: [web]"),
					notReady(corev1.ContainersReady, "ContainersNotReady", "containers with unready status: [web]"),
				),
				initsDone(),
				[]corev1.ContainerStatus{
					wantRunning("metrics", "metrics-1", 0, 6.0),
					func() corev1.ContainerStatus {
						s := wantInstance("web", "web-1", 1)
						s.State.Terminated = &corev1.ContainerStateTerminated{
							ExitCode: 137,
							Reason:   "ContainerStatusUnknown",
							Message:  "The container could not be located when the pod was terminated",
						}
						return s
					}(),
				},
			),
		},
		"init containers whose records are gone count as done once regular containers exist": {
			runtime: func(rt *kubecontainer.PodStatus) { rt.Containers = rt.Containers[:2] },
			want: wantStatus(corev1.PodRunning,
				wantConditions(readyToStart, initialized, podReady, allReady),
				[]corev1.ContainerStatus{
					func() corev1.ContainerStatus {
						s := wantWaiting("migrate", "", "")
						s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
							Reason:  "Completed",
							Message: "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally",
						}}
						s.Ready = true
						return s
					}(),
					func() corev1.ContainerStatus {
						s := wantWaiting("warm-cache", "", "")
						s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
							Reason:  "Completed",
							Message: "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally",
						}}
						s.Ready = true
						return s
					}(),
				},
				[]corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 0, 6.0), wantRunning("web", "web-1", 0, 6.1)},
			),
		},
		"a container that fails its readiness probe is running but not ready": {
			input: func(in *Input) { in.Ready = map[string]bool{"metrics": false, "web": true} },
			want: wantStatus(corev1.PodRunning,
				wantConditions(
					readyToStart,
					initialized,
					notReady(corev1.PodReady, "ContainersNotReady", "containers with unready status: [metrics]"),
					notReady(corev1.ContainersReady, "ContainersNotReady", "containers with unready status: [metrics]"),
				),
				initsDone(),
				[]corev1.ContainerStatus{
					func() corev1.ContainerStatus {
						s := wantRunning("metrics", "metrics-1", 0, 6.0)
						s.Ready = false
						return s
					}(),
					wantRunning("web", "web-1", 0, 6.1),
				},
			),
		},
		"a pod between sandboxes keeps its IPs, and is not ready to start containers": {
			pod: func(p *corev1.Pod) {
				p.Status.PodIP, p.Status.PodIPs = "10.244.1.7", []corev1.PodIP{{IP: "10.244.1.7"}}
			},
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Sandboxes[0].State = kubecontainer.SandboxNotReady
				rt.Containers = nil
			},
			want: func() corev1.PodStatus {
				s := wantStatus(corev1.PodPending,
					wantConditions(
						notReady(corev1.PodReadyToStartContainers, "", ""),
						uninitialized,
						notReady(corev1.PodReady, "ContainersNotReady", "containers with unready status: [web metrics]"),
						notReady(corev1.ContainersReady, "ContainersNotReady", "containers with unready status: [web metrics]"),
					),
					[]corev1.ContainerStatus{wantWaiting("migrate", "PodInitializing", ""), wantWaiting("warm-cache", "PodInitializing", "")},
					[]corev1.ContainerStatus{wantWaiting("metrics", "PodInitializing", ""), wantWaiting("web", "PodInitializing", "")},
				)
				return s
			}(),
		},
		"a dual-stack pod lists one IP per family, the node's family first": {
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Sandboxes[0].IPs = []string{"fd00::7", "fd00::8", "10.244.1.7", "10.244.1.8"}
			},
			input: func(in *Input) { in.HostIPs = []string{"192.168.0.10", "192.168.0.11", "fd00:1::10"} },
			want: func() corev1.PodStatus {
				s := wantStatus(corev1.PodRunning,
					wantConditions(readyToStart, initialized, podReady, allReady),
					initsDone(),
					[]corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 0, 6.0), wantRunning("web", "web-1", 0, 6.1)},
				)
				s.HostIPs = []corev1.HostIP{{IP: "192.168.0.10"}, {IP: "fd00:1::10"}}
				s.PodIPs = []corev1.PodIP{{IP: "10.244.1.7"}, {IP: "fd00::7"}}
				return s
			}(),
		},
		"a host-network pod has the node's IP": {
			pod: func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Sandboxes[0].HostNetwork = true
				rt.Sandboxes[0].IPs = nil
			},
			want: func() corev1.PodStatus {
				s := wantStatus(corev1.PodRunning,
					wantConditions(readyToStart, initialized, podReady, allReady),
					initsDone(),
					[]corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 0, 6.0), wantRunning("web", "web-1", 0, 6.1)},
				)
				s.PodIP, s.PodIPs = "192.168.0.10", []corev1.PodIP{{IP: "192.168.0.10"}}
				return s
			}(),
		},
		"a pod that the API shows Failed stays Failed and unready whatever runs": {
			pod: func(p *corev1.Pod) {
				p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
			},
			want: func() corev1.PodStatus {
				s := wantStatus(corev1.PodFailed,
					wantConditions(
						readyToStart,
						initialized,
						notReady(corev1.PodReady, "PodFailed", ""),
						notReady(corev1.ContainersReady, "PodFailed", ""),
					),
					initsDone(),
					[]corev1.ContainerStatus{wantRunning("metrics", "metrics-1", 0, 6.0), wantRunning("web", "web-1", 0, 6.1)},
				)
				s.Reason, s.Message = "Evicted", "The node was low on resource: memory."
				return s
			}(),
		},
		"a pod with init containers only and no runtime record has no regular statuses to invent": {
			pod: func(p *corev1.Pod) { p.Spec.Containers = nil },
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Sandboxes = nil
				rt.Containers = []*kubecontainer.ContainerStatus{{Name: "stranger", State: kubecontainer.ContainerRunning}, nil}
			},
			want: func() corev1.PodStatus {
				s := wantStatus(corev1.PodPending,
					wantConditions(
						notReady(corev1.PodReadyToStartContainers, "", ""),
						uninitialized,
						cond(corev1.PodReady, corev1.ConditionTrue, "", "", now),
						allReady,
					),
					[]corev1.ContainerStatus{wantWaiting("migrate", "PodInitializing", ""), wantWaiting("warm-cache", "PodInitializing", "")},
					nil,
				)
				s.PodIP, s.PodIPs = "", nil
				s.Resources, s.AllocatedResources = &corev1.ResourceRequirements{}, nil
				return s
			}(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := basePod()
			if tc.pod != nil {
				tc.pod(pod)
			}
			rt := baseRuntime()
			if tc.runtime != nil {
				tc.runtime(rt)
			}
			in := Input{Pod: pod, Runtime: rt, HostIPs: []string{"192.168.0.10"}, Now: at(testNow)}
			if tc.input != nil {
				tc.input(&in)
			}
			got := Generate(in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Generate() mismatch (-want +got):\n%s", diff)
			}
			if again := Merge(pod.Status, got); !equality.Semantic.DeepEqual(again, got) {
				t.Errorf("Merge() of a generated status changed it (-generated +merged):\n%s", cmp.Diff(got, again))
			}
		})
	}
}

func TestPodPhase(t *testing.T) {
	tests := map[string]struct {
		pod     func(*corev1.Pod)
		runtime func(*kubecontainer.PodStatus)
		want    corev1.PodPhase
	}{
		"containers exited 0 under Never: succeeded": {
			pod: func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Containers[0] = exitedInstance("web", "web-1", 0, 0, 6.1)
				rt.Containers[1] = exitedInstance("metrics", "metrics-1", 0, 0, 6.0)
			},
			want: corev1.PodSucceeded,
		},
		"one container failed under Never: failed": {
			pod: func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Containers[0] = exitedInstance("web", "web-1", 0, 2, 6.1)
				rt.Containers[1] = exitedInstance("metrics", "metrics-1", 0, 0, 6.0)
			},
			want: corev1.PodFailed,
		},
		"one container failed under OnFailure: running, it will restart": {
			pod: func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Containers[0] = exitedInstance("web", "web-1", 0, 2, 6.1)
				rt.Containers[1] = exitedInstance("metrics", "metrics-1", 0, 0, 6.0)
			},
			want: corev1.PodRunning,
		},
		"all exited 0 under Always: running, they will restart": {
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Containers[0] = exitedInstance("web", "web-1", 0, 0, 6.1)
				rt.Containers[1] = exitedInstance("metrics", "metrics-1", 0, 0, 6.0)
			},
			want: corev1.PodRunning,
		},
		"containers removed from the runtime after they ended under Never: the API's record decides": {
			pod: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Status.InitContainerStatuses = initsDone()
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					wantExited("metrics", "metrics-1", 0, 0, 6.0),
					wantExited("web", "web-1", 0, 0, 6.1),
				}
			},
			runtime: func(rt *kubecontainer.PodStatus) { rt.Sandboxes, rt.Containers = nil, nil },
			want:    corev1.PodSucceeded,
		},
		"a sidecar that runs does not hold the pod in Pending": {
			pod: func(p *corev1.Pod) {
				p.Spec.InitContainers[1].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			},
			runtime: func(rt *kubecontainer.PodStatus) {
				rt.Containers[2] = runningInstance("warm-cache", "warm-cache-1", 0, 4.1)
			},
			want: corev1.PodRunning,
		},
		"nothing at all": {
			runtime: func(rt *kubecontainer.PodStatus) { rt.Sandboxes, rt.Containers = nil, nil },
			want:    corev1.PodPending,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := basePod()
			if tc.pod != nil {
				tc.pod(pod)
			}
			rt := baseRuntime()
			if tc.runtime != nil {
				tc.runtime(rt)
			}
			if got := Phase(pod, rt); got != tc.want {
				t.Errorf("Phase() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMergeStatus(t *testing.T) {
	terminated := func(id string, exitCode int32) corev1.ContainerStatus {
		s := wantExited("web", id, 1, exitCode, 6.1)
		return s
	}
	tests := map[string]struct {
		old, generated, want corev1.PodStatus
	}{
		"a terminal phase never goes back, with its reason": {
			old:       corev1.PodStatus{Phase: corev1.PodSucceeded, Reason: "Done"},
			generated: corev1.PodStatus{Phase: corev1.PodRunning},
			want:      corev1.PodStatus{Phase: corev1.PodSucceeded, Reason: "Done"},
		},
		"one terminal phase does not turn into the other": {
			old:       corev1.PodStatus{Phase: corev1.PodFailed},
			generated: corev1.PodStatus{Phase: corev1.PodSucceeded},
			want:      corev1.PodStatus{Phase: corev1.PodFailed},
		},
		"a new phase drops the old phase's reason": {
			old:       corev1.PodStatus{Phase: corev1.PodPending, Reason: "SomethingPending", Message: "waiting"},
			generated: corev1.PodStatus{Phase: corev1.PodRunning},
			want:      corev1.PodStatus{Phase: corev1.PodRunning},
		},
		"a terminated instance never turns back into a waiting container": {
			old: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{terminated("web-1", 0)}},
			generated: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				wantWaiting("web", "ContainerCreating", ""),
			}},
			want: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{terminated("web-1", 0)}},
		},
		"a terminated instance never runs again": {
			old: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{terminated("web-1", 0)}},
			generated: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				wantRunning("web", "web-1", 1, 6.1),
			}},
			want: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{terminated("web-1", 0)}},
		},
		"a new instance may follow a terminated one": {
			old: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{terminated("web-1", 1)}},
			generated: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				wantRunning("web", "web-2", 2, 20),
			}},
			want: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				wantRunning("web", "web-2", 2, 20),
			}},
		},
		"a terminated instance may make way for a back-off that shows it as last state": {
			old: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{terminated("web-1", 1)}},
			generated: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{func() corev1.ContainerStatus {
				s := wantInstance("web", "web-1", 1)
				s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
				s.LastTerminationState = terminatedState("web-1", 1, 6.1)
				return s
			}()}},
			want: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{func() corev1.ContainerStatus {
				s := wantInstance("web", "web-1", 1)
				s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
				s.LastTerminationState = terminatedState("web-1", 1, 6.1)
				return s
			}()}},
		},
		"restart counts never decrease": {
			old:       corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{wantRunning("migrate", "migrate-1", 5, 2.1)}},
			generated: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{wantRunning("migrate", "migrate-2", 0, 9)}},
			want:      corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{wantRunning("migrate", "migrate-2", 5, 9)}},
		},
		"conditions of others are kept, owned ones not generated are dropped, PodScheduled keeps its time": {
			old: corev1.PodStatus{Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: sec(0)},
				{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, LastTransitionTime: sec(1)},
				{Type: "example.com/lb", Status: corev1.ConditionFalse, LastTransitionTime: sec(3)},
			}},
			generated: corev1.PodStatus{Conditions: []corev1.PodCondition{
				cond(corev1.PodScheduled, corev1.ConditionTrue, "", "", now),
			}},
			want: corev1.PodStatus{Conditions: []corev1.PodCondition{
				{Type: "example.com/lb", Status: corev1.ConditionFalse, LastTransitionTime: sec(3)},
				cond(corev1.PodScheduled, corev1.ConditionTrue, "", "", sec(0)),
			}},
		},
		"what nodelet does not manage is kept": {
			old: corev1.PodStatus{
				QOSClass: corev1.PodQOSGuaranteed, NominatedNodeName: "node-b", Resize: corev1.PodResizeStatusInProgress,
				StartTime: ptr.To(sec(1)), ObservedGeneration: 7, HostIP: "192.168.0.10", HostIPs: []corev1.HostIP{{IP: "192.168.0.10"}},
				ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "gpu"}},
			},
			generated: corev1.PodStatus{StartTime: &now, ObservedGeneration: 2},
			want: corev1.PodStatus{
				QOSClass: corev1.PodQOSGuaranteed, NominatedNodeName: "node-b", Resize: corev1.PodResizeStatusInProgress,
				StartTime: ptr.To(sec(1)), ObservedGeneration: 7, HostIP: "192.168.0.10", HostIPs: []corev1.HostIP{{IP: "192.168.0.10"}},
				ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "gpu"}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Merge(tc.old, tc.generated)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Merge() mismatch (-want +got):\n%s", diff)
			}
			if again := Merge(tc.old, got); !equality.Semantic.DeepEqual(again, got) {
				t.Errorf("Merge() is not idempotent (-once +twice):\n%s", cmp.Diff(got, again))
			}
		})
	}
}

func TestStatusEqual(t *testing.T) {
	pod := basePod()
	rt := baseRuntime()
	rt.Containers[0] = exitedInstance("web", "web-1", 0, 1, 6.1)
	rt.Containers[0].Message = "boom"
	status := Generate(Input{Pod: pod, Runtime: rt, HostIPs: []string{"192.168.0.10"}, Now: at(testNow)})
	// Sub-second times, as a status built in memory may hold.
	status.StartTime = ptr.To(metav1.NewTime(at(testNow)))
	status.Conditions[0].LastTransitionTime = metav1.NewTime(at(testNow))
	status.ContainerStatuses[1].State.Terminated.FinishedAt = metav1.NewTime(at(7.6))

	roundTrip := func(s corev1.PodStatus) corev1.PodStatus {
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshalling status: %v", err)
		}
		var out corev1.PodStatus
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("unmarshalling status: %v", err)
		}
		return out
	}

	tests := map[string]struct {
		other corev1.PodStatus
		want  bool
	}{
		"the status as the API server returns it": {
			other: roundTrip(status),
			want:  true,
		},
		"the same conditions in another order": {
			other: func() corev1.PodStatus {
				s := roundTrip(status)
				s.Conditions[0], s.Conditions[4] = s.Conditions[4], s.Conditions[0]
				return s
			}(),
			want: true,
		},
		"a condition one second later": {
			other: func() corev1.PodStatus {
				s := roundTrip(status)
				s.Conditions[2].LastTransitionTime = metav1.NewTime(s.Conditions[2].LastTransitionTime.Add(time.Second))
				return s
			}(),
			want: false,
		},
		"a condition fewer": {
			other: func() corev1.PodStatus {
				s := roundTrip(status)
				s.Conditions = s.Conditions[1:]
				return s
			}(),
			want: false,
		},
		"another restart count": {
			other: func() corev1.PodStatus {
				s := roundTrip(status)
				s.ContainerStatuses[1].RestartCount++
				return s
			}(),
			want: false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Equal(status, tc.other); got != tc.want {
				t.Errorf("Equal() = %v, want %v; diff (-generated +other):\n%s", got, tc.want, cmp.Diff(status, tc.other))
			}
			if got := Equal(tc.other, status); got != tc.want {
				t.Errorf("Equal() is not symmetric: reversed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTerminationMessagesShareTheBudget(t *testing.T) {
	pod := basePod()
	rt := baseRuntime()
	rt.Containers[0] = exitedInstance("web", "web-1", 0, 1, 6.1)
	// Four containers share 12 KiB: 3072 bytes each. Byte 3072 of this
	// message is the middle of an "é", so the cut falls one byte earlier.
	rt.Containers[0].Message = "x" + strings.Repeat("é", 2000)
	got := Generate(Input{Pod: pod, Runtime: rt, Now: at(testNow)})
	message := got.ContainerStatuses[1].State.Terminated.Message
	if want := "x" + strings.Repeat("é", 1535); message != want {
		t.Errorf("termination message is %d bytes ending in %q, want %d bytes", len(message), message[len(message)-4:], len(want))
	}
}

// fuzzReader turns fuzz input into choices; past its end every choice is 0.
type fuzzReader struct{ data []byte }

func (r *fuzzReader) next() int {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return int(b)
}

func (r *fuzzReader) pick(n int) int { return r.next() % n }
func (r *fuzzReader) bool() bool     { return r.next()%2 == 1 }

func pickFrom[T any](r *fuzzReader, options ...T) T { return options[r.pick(len(options))] }

// fuzzInput builds a pod, its old status and a runtime record from fuzz
// input, free to contradict each other as a stale cache or a buggy runtime
// could.
func fuzzInput(data []byte) Input {
	r := &fuzzReader{data: data}
	names := []string{"a", "b", "c", "d", "", "zz"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Generation: int64(r.pick(4))}}
	pod.Spec.RestartPolicy = pickFrom(r, corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever, "")
	pod.Spec.HostNetwork = r.bool()
	for i, n := 0, r.pick(3); i < n; i++ {
		c := corev1.Container{Name: pickFrom(r, names...), Image: "img"}
		if r.pick(4) == 0 {
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	for i, n := 0, r.pick(4); i < n; i++ {
		c := corev1.Container{Name: pickFrom(r, names...), Image: "img"}
		if r.pick(5) == 0 {
			c.RestartPolicy = ptr.To(pickFrom(r, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure, corev1.ContainerRestartPolicyAlways))
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	if r.bool() {
		pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "gate"}}
	}
	if r.pick(4) == 0 {
		pod.DeletionTimestamp = ptr.To(sec(1))
	}

	pod.Status.Phase = pickFrom(r, corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown, "")
	pod.Status.PodIP = pickFrom(r, "", "10.0.0.1", "nonsense")
	pod.Status.ContainerStatuses = fuzzContainerStatuses(r, names)
	pod.Status.InitContainerStatuses = fuzzContainerStatuses(r, names)
	for i, n := 0, r.pick(4); i < n; i++ {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
			Type:   pickFrom(r, corev1.PodReady, corev1.PodInitialized, corev1.DisruptionTarget, "gate", corev1.PodScheduled),
			Status: pickFrom(r, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown),
		})
	}

	rt := &kubecontainer.PodStatus{}
	for i, n := 0, r.pick(3); i < n; i++ {
		if r.pick(8) == 0 {
			rt.Sandboxes = append(rt.Sandboxes, nil)
			continue
		}
		rt.Sandboxes = append(rt.Sandboxes, &kubecontainer.SandboxStatus{
			ID:          pickFrom(r, "s1", "s2"),
			State:       pickFrom(r, kubecontainer.SandboxReady, kubecontainer.SandboxNotReady),
			HostNetwork: r.bool(),
			IPs:         pickFrom(r, []string(nil), []string{"10.0.0.2"}, []string{"fd00::2", "10.0.0.2"}, []string{"bad"}),
		})
	}
	for i, n := 0, r.pick(6); i < n; i++ {
		if r.pick(8) == 0 {
			rt.Containers = append(rt.Containers, nil)
			continue
		}
		rt.Containers = append(rt.Containers, &kubecontainer.ContainerStatus{
			ID:           kubecontainer.ContainerID{Type: "containerd", ID: pickFrom(r, "", "i1", "i2", "i3")},
			Name:         pickFrom(r, names...),
			SandboxID:    pickFrom(r, "s1", "s2", ""),
			State:        pickFrom(r, kubecontainer.ContainerCreated, kubecontainer.ContainerRunning, kubecontainer.ContainerExited, kubecontainer.ContainerUnknown, ""),
			StartedAt:    pickFrom(r, time.Time{}, at(1.5)),
			FinishedAt:   pickFrom(r, time.Time{}, at(2.5)),
			ExitCode:     pickFrom(r, int32(0), 1, 137, -1),
			RestartCount: r.pick(3),
			Message:      strings.Repeat("m", r.pick(3)*5000),
		})
	}
	waiting := map[string]*kubecontainer.ContainerError{}
	for i, n := 0, r.pick(3); i < n; i++ {
		waiting[pickFrom(r, names...)] = &kubecontainer.ContainerError{Reason: "CrashLoopBackOff"}
	}
	return Input{
		Pod:      pod,
		Runtime:  pickFrom(r, rt, rt, rt, nil),
		Waiting:  pickFrom(r, waiting, nil),
		Ready:    pickFrom(r, map[string]bool(nil), map[string]bool{"a": false}),
		Started:  pickFrom(r, map[string]bool(nil), map[string]bool{"b": false}),
		HostIPs:  pickFrom(r, []string(nil), []string{"192.168.0.1"}, []string{"fd00::1", "192.168.0.1"}, []string{"junk"}),
		Terminal: r.bool(),
		Now:      pickFrom(r, time.Time{}, at(3.3)),
	}
}

func fuzzContainerStatuses(r *fuzzReader, names []string) []corev1.ContainerStatus {
	var statuses []corev1.ContainerStatus
	for i, n := 0, r.pick(3); i < n; i++ {
		s := corev1.ContainerStatus{
			Name:         pickFrom(r, names...),
			ContainerID:  pickFrom(r, "", "containerd://i1", "containerd://i2"),
			RestartCount: int32(r.pick(4)),
		}
		switch r.pick(4) {
		case 0:
			s.State.Running = &corev1.ContainerStateRunning{}
		case 1:
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(r.pick(2)), ContainerID: s.ContainerID}
		case 2:
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		}
		if r.bool() {
			s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
		}
		statuses = append(statuses, s)
	}
	return statuses
}

func FuzzGeneratePodStatus(f *testing.F) {
	for _, seed := range [][]byte{
		nil,
		{0, 0, 0, 2, 1, 3, 1, 2, 0},
		[]byte("nodelet pod status"),
		// Duplicate condition types in the API's status.
		[]byte("000000000002010"),
		{3, 1, 2, 0, 0, 1, 1, 0, 2, 2, 1, 3, 3, 2, 1, 5, 2, 1, 1, 0, 2, 3, 1, 1, 0, 2, 2, 1, 4, 1, 2, 3, 1, 1},
		{1, 2, 1, 2, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 2, 2, 5, 5, 5, 5, 5, 5, 5},
		[]byte(fmt.Sprint(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		old := *in.Pod.Status.DeepCopy()
		got := Generate(in)

		switch got.Phase {
		case corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed:
		default:
			if !(old.Phase == got.Phase && IsTerminalPhase(old.Phase)) {
				t.Errorf("phase %q is not one nodelet reports", got.Phase)
			}
		}
		if IsTerminalPhase(old.Phase) && got.Phase != old.Phase {
			t.Errorf("phase went from terminal %s to %s", old.Phase, got.Phase)
		}
		if merged := Merge(old, got); !equality.Semantic.DeepEqual(merged, got) {
			t.Errorf("Merge() of a generated status changed it:\n%s", cmp.Diff(got, merged))
		}
		running := false
		if in.Runtime != nil {
			running = anyContainerRunning(in.Runtime)
		}
		if in.Terminal && !running && !IsTerminalPhase(got.Phase) {
			t.Errorf("a terminal pod with nothing running has phase %s", got.Phase)
		}
		for _, pair := range [][2][]corev1.ContainerStatus{
			{old.ContainerStatuses, got.ContainerStatuses},
			{old.InitContainerStatuses, got.InitContainerStatuses},
		} {
			for _, s := range pair[1] {
				if prev := findContainerStatus(pair[0], s.Name); prev != nil && s.RestartCount < prev.RestartCount {
					t.Errorf("restart count of %q went from %d to %d", s.Name, prev.RestartCount, s.RestartCount)
				}
			}
		}
		if IsTerminalPhase(got.Phase) && conditionTrue(got.Conditions, corev1.PodReady) {
			t.Errorf("a %s pod is Ready", got.Phase)
		}
		for _, c := range got.Conditions {
			if prev := findCondition(old.Conditions, c.Type); prev != nil && prev.Status == c.Status && !prev.LastTransitionTime.Equal(&c.LastTransitionTime) {
				t.Errorf("condition %s stayed %s but its transition time moved from %v to %v", c.Type, c.Status, prev.LastTransitionTime, c.LastTransitionTime)
			}
		}
		_ = Phase(in.Pod, in.Runtime)
	})
}
