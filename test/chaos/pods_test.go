package chaos

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/test/chaos/invariants"
)

// podKind is one kind of pod the churn makes: what it is made of and the
// state it settles in once nothing fails (invariants.ConvergesTo).
type podKind struct {
	name        string
	convergesTo string
	mutate      func(p *corev1.Pod, n int)
}

// hostPortBase is added to the node's daemon port for the churn's host
// ports, so that stacks side by side never share one; hostPorts of them
// are handed out in turn.
const (
	hostPortBase = 700
	hostPorts    = 50
)

// podKinds are the kinds of pods nodelet supports: restart policies, init
// containers, sidecars, probes, hooks, volumes, host ports, the host's
// network, containers that crash, succeed and fail.
func podKinds(nodeletPort int) []podKind {
	return []podKind{
		{"sleeper", "Ready", nil},
		{"init", "Ready", func(p *corev1.Pod, _ int) {
			p.Spec.InitContainers = []corev1.Container{container("init", "echo init > /work/done"), container("init2", "test -f /work/done")}
			withEmptyDir(p, "/work")
		}},
		{"sidecar", "Ready", func(p *corev1.Pod, _ int) {
			sidecar := container("sidecar", "exec sleep 3600")
			sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			p.Spec.InitContainers = []corev1.Container{sidecar}
		}},
		{"probes", "Ready", func(p *corev1.Pod, _ int) {
			c := &p.Spec.Containers[0]
			c.Command = []string{"sh", "-c", "touch /tmp/ready; exec sleep 3600"}
			c.ReadinessProbe = execProbe("cat", "/tmp/ready")
			c.LivenessProbe = execProbe("true")
			c.StartupProbe = execProbe("true")
		}},
		{"hooks", "Ready", func(p *corev1.Pod, _ int) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo started > /tmp/hook"}}},
				PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo stopping > /tmp/hook"}}},
			}
		}},
		{"volumes", "Ready", func(p *corev1.Pod, _ int) {
			withEmptyDir(p, "/data")
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
			}}})
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "info", MountPath: "/info"})
		}},
		{"hostport", "Ready", func(p *corev1.Pod, n int) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{
				ContainerPort: 8080, HostPort: int32(nodeletPort + hostPortBase + n%hostPorts), Protocol: corev1.ProtocolTCP,
			}}
		}},
		{"hostnetwork", "Ready", func(p *corev1.Pod, _ int) { p.Spec.HostNetwork = true }},
		{"crashloop", "Running", func(p *corev1.Pod, _ int) {
			p.Spec.Containers[0].Command = []string{"sh", "-c", "sleep 2; exit 1"}
		}},
		{"job", "Succeeded", func(p *corev1.Pod, _ int) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.InitContainers = []corev1.Container{container("init", "true")}
			p.Spec.Containers[0].Command = []string{"sh", "-c", "sleep 2"}
		}},
		{"failing", "Failed", func(p *corev1.Pod, _ int) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.Containers[0].Command = []string{"sh", "-c", "sleep 1; exit 3"}
		}},
		{"onfailure", "Succeeded", func(p *corev1.Pod, _ int) {
			p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			// Fails once, then succeeds: the emptyDir keeps the mark
			// across the restart.
			p.Spec.Containers[0].Command = []string{"sh", "-c", "if [ -f /work/once ]; then exit 0; fi; touch /work/once; exit 1"}
			withEmptyDir(p, "/work")
		}},
	}
}

// newPod makes the nth pod of the churn, of kind.
func newPod(ns, image string, kind podKind, n int) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   ns,
			Name:        fmt.Sprintf("%s-%d", kind.name, n),
			Labels:      map[string]string{"kind": kind.name},
			Annotations: map[string]string{invariants.ConvergesTo: kind.convergesTo},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			// sleep as PID 1 ignores SIGTERM: every stop lasts the
			// grace period, kept short.
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers:                    []corev1.Container{container("app", "exec sleep 3600")},
		},
	}
	if kind.mutate != nil {
		kind.mutate(pod, n)
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			list[i].Image = image
		}
	}
	return pod
}

func container(name, script string) corev1.Container {
	return corev1.Container{Name: name, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh", "-c", script}}
}

func withEmptyDir(p *corev1.Pod, path string) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			list[i].VolumeMounts = append(list[i].VolumeMounts, corev1.VolumeMount{Name: "work", MountPath: path})
		}
	}
}

func execProbe(command ...string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: command}},
		PeriodSeconds: 2, TimeoutSeconds: 5, FailureThreshold: 3,
	}
}

// pickKind draws a kind.
func pickKind(kinds []podKind, rng *rand.Rand) podKind { return kinds[rng.IntN(len(kinds))] }
