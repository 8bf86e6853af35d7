package runtime

// Fuzz targets for the labels and annotations nodelet reads back from the
// runtime: whatever a runtime object carries decodes to values nodelet
// can act on, and what nodelet writes decodes to what it wrote.

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// FuzzDecodeContainerAnnotations decodes any values under nodelet's keys,
// as containerFromList and containerFromStatus do.
func FuzzDecodeContainerAnnotations(f *testing.F) {
	f.Add("3", "20s", "30", "abc", "/dev/termination-log", "File", "web", "ns", "uid")
	f.Add("", "", "", "", "", "", "", "", "")
	f.Add("-1", "-5s", "-1", "", "", "FallbackToLogsOnError", "a", "", "u")
	f.Add("9223372036854775807", "2562047h47m16.854775807s", "9223372036854775807", "x", "/x", "?", "a", "b", "c")
	f.Add("2147483647", "1ns", "9223372037", "x", "/x", "File", "a", "b", "c")
	f.Fuzz(func(t *testing.T, restartCount, backoff, grace, hash, path, policy, name, namespace, uid string) {
		annotations := map[string]string{
			AnnotationRestartCount:             restartCount,
			AnnotationRestartBackoff:           backoff,
			AnnotationPodTerminationGrace:      grace,
			AnnotationContainerHash:            hash,
			AnnotationTerminationMessagePath:   path,
			AnnotationTerminationMessagePolicy: policy,
		}
		labels := map[string]string{kubecontainer.LabelPodName: name, kubecontainer.LabelPodNamespace: namespace, kubecontainer.LabelPodUID: uid, kubecontainer.LabelContainerName: name}
		m := &Manager{runtimeName: "containerd"}
		for _, c := range []*kubecontainer.ContainerStatus{
			m.containerFromList(&runtimeapi.Container{Id: "c", Labels: labels, Annotations: annotations, State: runtimeapi.ContainerState_CONTAINER_RUNNING}),
			m.containerFromStatus("s", &runtimeapi.ContainerStatus{Id: "c", Labels: labels, Annotations: annotations, State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: 1}),
		} {
			// The API's restartCount is an int32, and the next instance's
			// count is one more.
			if c.RestartCount < 0 || c.RestartCount >= math.MaxInt32 {
				t.Errorf("restart count %q decoded as %d, want within [0, %d)", restartCount, c.RestartCount, math.MaxInt32)
			}
			if c.RestartBackoff < 0 || c.RestartBackoff > MaxRestartBackoff {
				t.Errorf("restart back-off %q decoded as %v, want within [0, %v]", backoff, c.RestartBackoff, MaxRestartBackoff)
			}
			if c.TerminationGracePeriod < 0 {
				t.Errorf("termination grace period %q decoded as %v, want >= 0", grace, c.TerminationGracePeriod)
			}
			if c.Hash != hash || c.Name != name {
				t.Errorf("hash and name decoded as %q, %q, want %q, %q", c.Hash, c.Name, hash, name)
			}
		}
		id, ok := identityFromLabels(labels)
		if ok != (uid != "" && name != "" && namespace != "") {
			t.Errorf("identityFromLabels(%v) ok = %v", labels, ok)
		}
		if ok && (string(id.UID) != uid || id.Name != name || id.Namespace != namespace) {
			t.Errorf("identityFromLabels(%v) = %+v", labels, id)
		}
	})
}

// FuzzContainerAnnotationsRoundTrip writes a container's annotations as
// generateContainerConfig does and reads them back.
func FuzzContainerAnnotationsRoundTrip(f *testing.F) {
	f.Add("web", "nginx:1", "/dev/termination-log", "File", 0, int64(0), int64(30), false)
	f.Add("", "", "", "", 7, int64(20*time.Second), int64(0), true)
	f.Add("a", "b", "/x", "FallbackToLogsOnError", 1<<40, int64(MaxRestartBackoff), int64(math.MaxInt64), true)
	f.Fuzz(func(t *testing.T, name, image, path, policy string, restartCount int, backoff, grace int64, deleting bool) {
		if restartCount < 0 || restartCount >= math.MaxInt32 || backoff < 0 || backoff > int64(MaxRestartBackoff) || grace < 0 {
			// Never written: ComputePodActions plans counts and
			// back-offs in these ranges (FuzzComputePodActions), and
			// the API validates the grace period.
			return
		}
		container := &corev1.Container{Name: name, Image: image, TerminationMessagePath: path, TerminationMessagePolicy: corev1.TerminationMessagePolicy(policy)}
		pod := &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To(grace)}}
		if deleting {
			pod.DeletionTimestamp = &metav1.Time{}
			pod.DeletionGracePeriodSeconds = ptr.To(grace / 2)
		}
		got := decodeContainerAnnotations(newContainerAnnotations(pod, container, restartCount, time.Duration(backoff)))
		want := containerAnnotations{
			Hash:                     HashContainer(container),
			RestartCount:             restartCount,
			RestartBackoff:           time.Duration(backoff),
			TerminationMessagePath:   path,
			TerminationMessagePolicy: corev1.TerminationMessagePolicy(policy),
			HasResources:             true,
		}
		seconds := grace
		if deleting {
			seconds = grace / 2
		}
		want.TerminationGracePeriod = time.Duration(math.MaxInt64)
		if seconds <= math.MaxInt64/int64(time.Second) {
			want.TerminationGracePeriod = time.Duration(seconds) * time.Second
		}
		if got != want {
			t.Errorf("annotations read back as %+v, want %+v", got, want)
		}
	})
}
