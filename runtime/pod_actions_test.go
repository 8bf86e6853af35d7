package runtime

// Pure tests of ComputePodActions and RestartBackoff: plain values in, a
// whole plan out, in the kubelet's style — one base pod and runtime state,
// each case a mutation of both and the complete expected plan.

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func TestComputePodActions(t *testing.T) {
	cases := map[string]podActionsCase{
		"a running pod needs nothing": {
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a new pod gets a sandbox and all its containers": {
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { s.Sandboxes, s.Containers = nil, nil },
			want: PodActions{
				CreateSandbox:     true,
				ContainersToKill:  noKills(),
				ContainersToStart: []ContainerToStart{{Index: 0}, {Index: 1}},
			},
		},
		"a pod with init containers starts the first one only": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init1", Image: "busybox:1"}, {Name: "init2", Image: "busybox:1"}}
			},
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { s.Sandboxes, s.Containers = nil, nil },
			want: PodActions{
				CreateSandbox:         true,
				ContainersToKill:      noKills(),
				InitContainersToStart: []ContainerToStart{{Index: 0}},
			},
		},
		"a running init container holds the rest back": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init1", Image: "busybox:1"}, {Name: "init2", Image: "busybox:1"}}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{running("init1", "sb1", 0, p)}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a finished init container lets the next one start": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init1", Image: "busybox:1"}, {Name: "init2", Image: "busybox:1"}}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{exited(running("init1", "sb1", 0, p), 0, time.Second)}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(), InitContainersToStart: []ContainerToStart{{Index: 1}}},
		},
		"all init containers done: the regular containers start": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init1", Image: "busybox:1"}}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{exited(running("init1", "sb1", 0, p), 0, time.Second)}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(), ContainersToStart: []ContainerToStart{{Index: 0}, {Index: 1}}},
		},
		"a failed init container under Never does nothing more": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Spec.InitContainers = []corev1.Container{{Name: "init1", Image: "busybox:1"}}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{exited(running("init1", "sb1", 0, p), 1, time.Second)}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a failed init container under OnFailure restarts at once the first time": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
				p.Spec.InitContainers = []corev1.Container{{Name: "init1", Image: "busybox:1"}}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{exited(running("init1", "sb1", 0, p), 1, time.Second)}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				InitContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"an exited container under Always restarts at once the first time": {
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { exited(s.Containers[0], 0, time.Second) },
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"a container that crashed again waits out its back-off": {
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers[0].RestartCount = 3
				s.Containers[0].RestartBackoff = 40 * time.Second
				exited(s.Containers[0], 1, 15*time.Second)
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				ContainersInBackOff: []ContainerBackOff{{Name: "app", Delay: 40 * time.Second, Until: testNow.Add(25 * time.Second)}}},
		},
		"a container whose back-off is over restarts with the delay doubled": {
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers[0].RestartCount = 3
				s.Containers[0].RestartBackoff = 40 * time.Second
				exited(s.Containers[0], 1, 41*time.Second)
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 4, Backoff: 80 * time.Second}}},
		},
		"an exited container under Never stays exited": {
			mutatePod:    func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { exited(s.Containers[0], 1, time.Second) },
			want:         PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a succeeded container under OnFailure stays exited": {
			mutatePod:    func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { exited(s.Containers[0], 0, time.Second) },
			want:         PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a changed image restarts that container only": {
			mutatePod: func(p *corev1.Pod) { p.Spec.Containers[1].Image = "busybox:2" },
			want: PodActions{SandboxID: "sb1",
				ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{
					{Type: "containerd", ID: "sidecar-0"}: {Name: "sidecar", Message: "Container sidecar definition changed, will be restarted"},
				},
				ContainersToStart: []ContainerToStart{{Index: 1, RestartCount: 1}}},
		},
		"a container created but never started is replaced": {
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers[1].State = kubecontainer.ContainerCreated
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{{Index: 1, RestartCount: 1}}},
		},
		"a dead sandbox is replaced and everything started again": {
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Sandboxes[0].State = kubecontainer.SandboxNotReady
				exited(s.Containers[0], 137, time.Second)
				exited(s.Containers[1], 137, time.Second)
			},
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 1, ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{
					{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff},
					{Index: 1, RestartCount: 1, Backoff: InitialRestartBackoff},
				}},
		},
		"a dead sandbox of a finished Never pod is not replaced": {
			mutatePod: func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Sandboxes[0].State = kubecontainer.SandboxNotReady
				exited(s.Containers[0], 0, time.Second)
				exited(s.Containers[1], 0, time.Second)
			},
			want: PodActions{KillPod: true, Attempt: 1, ContainersToKill: noKills()},
		},
		"a dead sandbox of a Never pod that never ran a container is retried": {
			mutatePod: func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Sandboxes[0].State = kubecontainer.SandboxNotReady
				s.Containers = nil
			},
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 1, ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{{Index: 0}, {Index: 1}}},
		},
		"a sandbox without an IP is replaced": {
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { s.Sandboxes[0].IPs = nil },
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 1, ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1}, {Index: 1, RestartCount: 1}}},
		},
		"a host-network sandbox needs no IP": {
			mutatePod: func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Sandboxes[0].IPs = nil
				s.Sandboxes[0].HostNetwork = true
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"an older duplicate of a running container is killed": {
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				older := running("app", "sb1", 0, p)
				older.ID.ID = "app-old"
				older.CreatedAt = testNow.Add(-2 * time.Hour)
				s.Containers = append(s.Containers, older)
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{
				{Type: "containerd", ID: "app-old"}: {Name: "app", Message: "Container has a newer instance"},
			}},
		},
		"a container the runtime lost continues the API's restart count": {
			mutatePod: func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 4, ContainerID: "containerd://gone"}}
			},
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { s.Containers = s.Containers[1:] },
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 5}}},
		},
		"a failed liveness probe kills and restarts the container": {
			probes: kubecontainer.ProbeResults{{Type: "containerd", ID: "app-0"}: {Liveness: kubecontainer.ProbeFailure}},
			want: PodActions{SandboxID: "sb1",
				ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{
					{Type: "containerd", ID: "app-0"}: {Name: "app", Message: "Container app failed liveness probe, will be restarted", Reason: KillReasonLivenessProbe},
				},
				ContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"a container failing its liveness probe again waits out its back-off": {
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers[0].RestartCount = 1
				s.Containers[0].RestartBackoff = InitialRestartBackoff
				s.Containers[0].StartedAt = testNow.Add(-30 * time.Second)
			},
			probes: kubecontainer.ProbeResults{{Type: "containerd", ID: "app-0"}: {Liveness: kubecontainer.ProbeFailure}},
			want: PodActions{SandboxID: "sb1",
				ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{
					{Type: "containerd", ID: "app-0"}: {Name: "app", Message: "Container app failed liveness probe, will be restarted", Reason: KillReasonLivenessProbe},
				},
				ContainersInBackOff: []ContainerBackOff{{Name: "app", Delay: InitialRestartBackoff, Until: testNow.Add(InitialRestartBackoff)}}},
		},
		"a failed startup probe kills and restarts the container": {
			probes: kubecontainer.ProbeResults{{Type: "containerd", ID: "sidecar-0"}: {Startup: kubecontainer.ProbeFailure}},
			want: PodActions{SandboxID: "sb1",
				ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{
					{Type: "containerd", ID: "sidecar-0"}: {Name: "sidecar", Message: "Container sidecar failed startup probe, will be restarted", Reason: KillReasonStartupProbe},
				},
				ContainersToStart: []ContainerToStart{{Index: 1, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"a failed liveness probe under Never stops the pod": {
			mutatePod:    func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { exited(s.Containers[1], 0, time.Second) },
			probes:       kubecontainer.ProbeResults{{Type: "containerd", ID: "app-0"}: {Liveness: kubecontainer.ProbeFailure}},
			want: PodActions{KillPod: true, SandboxID: "sb1",
				ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{
					{Type: "containerd", ID: "app-0"}: {Name: "app", Message: "Container app failed liveness probe", Reason: KillReasonLivenessProbe},
				}},
		},
		"a failed readiness probe or a probe result of an older instance changes nothing": {
			probes: kubecontainer.ProbeResults{
				{Type: "containerd", ID: "app-0"}:     {Readiness: kubecontainer.ProbeFailure},
				{Type: "containerd", ID: "sidecar-9"}: {Liveness: kubecontainer.ProbeFailure},
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a new pod with a sidecar starts the sidecar first": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{sidecarSpec("proxy"), {Name: "init", Image: "busybox:1"}}
			},
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { s.Containers = nil },
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				InitContainersToStart: []ContainerToStart{{Index: 0}}},
		},
		"a running sidecar lets the next init container start": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{sidecarSpec("proxy"), {Name: "init", Image: "busybox:1"}}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{running("proxy", "sb1", 0, p)}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				InitContainersToStart: []ContainerToStart{{Index: 1}}},
		},
		"a sidecar whose startup probe has not passed holds the rest back": {
			mutatePod: func(p *corev1.Pod) {
				proxy := sidecarSpec("proxy")
				proxy.StartupProbe = &corev1.Probe{}
				p.Spec.InitContainers = []corev1.Container{proxy}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{running("proxy", "sb1", 0, p)}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a sidecar that passed its startup probe lets the regular containers start": {
			mutatePod: func(p *corev1.Pod) {
				proxy := sidecarSpec("proxy")
				proxy.StartupProbe = &corev1.Probe{}
				p.Spec.InitContainers = []corev1.Container{proxy}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{running("proxy", "sb1", 0, p)}
			},
			probes: kubecontainer.ProbeResults{{Type: "containerd", ID: "proxy-0"}: {Startup: kubecontainer.ProbeSuccess}},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{{Index: 0}, {Index: 1}}},
		},
		"a sidecar failing its startup probe is restarted": {
			mutatePod: func(p *corev1.Pod) {
				proxy := sidecarSpec("proxy")
				proxy.StartupProbe = &corev1.Probe{}
				p.Spec.InitContainers = []corev1.Container{proxy}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{running("proxy", "sb1", 0, p)}
			},
			probes: kubecontainer.ProbeResults{{Type: "containerd", ID: "proxy-0"}: {Startup: kubecontainer.ProbeFailure}},
			want: PodActions{SandboxID: "sb1",
				ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{
					{Type: "containerd", ID: "proxy-0"}: {Name: "proxy", Message: "Init container proxy failed startup probe", Reason: KillReasonStartupProbe},
				},
				InitContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"a sidecar that exited beside running containers is restarted": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{sidecarSpec("proxy"), {Name: "init", Image: "busybox:1"}}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = append(s.Containers,
					exited(running("proxy", "sb1", 0, p), 1, time.Second),
					exited(running("init", "sb1", 0, p), 0, time.Minute))
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				InitContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"a sidecar failing its liveness probe is restarted": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{sidecarSpec("proxy")}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = append(s.Containers, running("proxy", "sb1", 0, p))
			},
			probes: kubecontainer.ProbeResults{{Type: "containerd", ID: "proxy-0"}: {Liveness: kubecontainer.ProbeFailure}},
			want: PodActions{SandboxID: "sb1",
				ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{
					{Type: "containerd", ID: "proxy-0"}: {Name: "proxy", Message: "Init container proxy failed liveness probe", Reason: KillReasonLivenessProbe},
				},
				InitContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"a sidecar gone from the runtime after the pod initialized runs again": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{sidecarSpec("proxy"), {Name: "init", Image: "busybox:1"}}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				InitContainersToStart: []ContainerToStart{{Index: 0}}},
		},
		"when the regular containers are done for good the sidecars are stopped": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
				p.Spec.InitContainers = []corev1.Container{sidecarSpec("proxy")}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				exited(s.Containers[0], 0, time.Second)
				exited(s.Containers[1], 0, time.Second)
				s.Containers = append(s.Containers, running("proxy", "sb1", 0, p))
			},
			want: PodActions{KillPod: true, SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a container in back-off keeps the sidecars running": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers = p.Spec.Containers[:1]
				p.Spec.InitContainers = []corev1.Container{sidecarSpec("proxy")}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers[0].RestartBackoff = 20 * time.Second
				exited(s.Containers[0], 1, time.Second)
				s.Containers = []*kubecontainer.ContainerStatus{s.Containers[0], running("proxy", "sb1", 0, p)}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				ContainersInBackOff: []ContainerBackOff{{Name: "app", Delay: 20 * time.Second, Until: testNow.Add(19 * time.Second)}}},
		},
		"an ephemeral container is started once, even while the pod initializes": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1"}}
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{
					{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1"}},
					{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "done", Image: "busybox:1"}},
				}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{
					running("init", "sb1", 0, p),
					exited(&kubecontainer.ContainerStatus{ID: kubecontainer.ContainerID{Type: "containerd", ID: "done-0"}, Name: "done", SandboxID: "sb1"}, 1, time.Second),
				}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				EphemeralContainersToStart: []ContainerToStart{{Index: 0}}},
		},
		"a container in unknown state is killed and restarted": {
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers[0].State = kubecontainer.ContainerUnknown
			},
			want: PodActions{SandboxID: "sb1",
				ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{
					{Type: "containerd", ID: "app-0"}: {Name: "app", Message: "Container is in unknown state"},
				},
				ContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
	}
	runPodActionsCases(t, cases)
}

func TestRestartBackoff(t *testing.T) {
	cases := map[string]struct {
		latest    kubecontainer.ContainerStatus
		wantDelay time.Duration
		wantUntil time.Time
		wantWait  bool
	}{
		"first crash restarts at once and arms 10s": {
			latest:    kubecontainer.ContainerStatus{StartedAt: testNow.Add(-time.Minute), FinishedAt: testNow.Add(-time.Second)},
			wantDelay: 10 * time.Second,
		},
		"second crash waits 10s after it finished": {
			latest:    kubecontainer.ContainerStatus{RestartBackoff: 10 * time.Second, StartedAt: testNow.Add(-5 * time.Second), FinishedAt: testNow.Add(-4 * time.Second)},
			wantUntil: testNow.Add(6 * time.Second),
			wantWait:  true,
		},
		"after the wait the delay doubles": {
			latest:    kubecontainer.ContainerStatus{RestartBackoff: 10 * time.Second, StartedAt: testNow.Add(-12 * time.Second), FinishedAt: testNow.Add(-11 * time.Second)},
			wantDelay: 20 * time.Second,
		},
		"the delay stops at five minutes": {
			latest:    kubecontainer.ContainerStatus{RestartBackoff: 300 * time.Second, StartedAt: testNow.Add(-302 * time.Second), FinishedAt: testNow.Add(-301 * time.Second)},
			wantDelay: 300 * time.Second,
		},
		"a container that ran over ten minutes starts a fresh sequence": {
			latest:    kubecontainer.ContainerStatus{RestartBackoff: 300 * time.Second, StartedAt: testNow.Add(-11 * time.Minute), FinishedAt: testNow.Add(-time.Second)},
			wantDelay: 10 * time.Second,
		},
		"a container that never started counts from its creation": {
			latest:    kubecontainer.ContainerStatus{RestartBackoff: 20 * time.Second, CreatedAt: testNow.Add(-3 * time.Second), FinishedAt: testNow.Add(-2 * time.Second)},
			wantUntil: testNow.Add(18 * time.Second),
			wantWait:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			delay, until, wait := RestartBackoff(&tc.latest, testNow)
			if delay != tc.wantDelay || !until.Equal(tc.wantUntil) || wait != tc.wantWait {
				t.Errorf("RestartBackoff() = (%v, %v, %v), want (%v, %v, %v)", delay, until, wait, tc.wantDelay, tc.wantUntil, tc.wantWait)
			}
		})
	}
}

func TestContainerAnnotationsRoundTrip(t *testing.T) {
	pod := basePod()
	grace := int64(45)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	annotations := newContainerAnnotations(pod, &pod.Spec.Containers[0], 7, 80*time.Second)
	got := decodeContainerAnnotations(annotations)
	want := containerAnnotations{
		Hash:                   HashContainer(&pod.Spec.Containers[0]),
		RestartCount:           7,
		RestartBackoff:         80 * time.Second,
		TerminationGracePeriod: 45 * time.Second,
		HasResources:           true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded annotations mismatch (-want +got):\n%s", diff)
	}
	if got := decodeContainerAnnotations(map[string]string{AnnotationRestartCount: "-3", AnnotationRestartBackoff: "soon"}); got != (containerAnnotations{}) {
		t.Errorf("damaged annotations decoded as %+v, want zero values", got)
	}
}

func TestHashContainerCoversNameAndImageOnly(t *testing.T) {
	a := corev1.Container{Name: "app", Image: "busybox:1"}
	b := a
	b.Args = []string{"sleep", "1"}
	if HashContainer(&a) != HashContainer(&b) {
		t.Error("hash changed with args; it must cover only name and image")
	}
	c := a
	c.Image = "busybox:2"
	if HashContainer(&a) == HashContainer(&c) {
		t.Error("hash did not change with the image")
	}
}
