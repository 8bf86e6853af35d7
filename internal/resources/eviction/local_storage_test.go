package eviction

// Pure tests: a pod's local storage and its limits, over values.

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestLocalVolume(t *testing.T) {
	for name, tc := range map[string]struct {
		source corev1.VolumeSource
		want   bool
	}{
		"an emptyDir on disk":    {corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, true},
		"a memory emptyDir":      {corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}, false},
		"a configMap":            {corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}, true},
		"a secret, on tmpfs":     {corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}, false},
		"a projected, on tmpfs":  {corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}, false},
		"a hostPath, the host's": {corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := LocalVolume(&corev1.Volume{Name: "v", VolumeSource: tc.source}); got != tc.want {
				t.Errorf("LocalVolume() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWithLocalStorageCountsLogsAndVolumes(t *testing.T) {
	u := PodUsage{
		EphemeralStorage: quantity("10Mi"),
		Inodes:           resource.NewQuantity(100, resource.DecimalSI),
		Containers: []ContainerUsage{
			{Name: "app", EphemeralStorage: quantity("8Mi")},
			{Name: "sidecar", EphemeralStorage: quantity("2Mi")},
		},
	}
	got := WithLocalStorage(u, LocalStorage{
		Volumes: map[string]DiskUsage{"scratch": {Bytes: 5 << 20, Inodes: 3}, "config": {Bytes: 1 << 20, Inodes: 4}},
		Logs:    map[string]DiskUsage{"app": {Bytes: 1 << 20, Inodes: 2}, "gone": {Bytes: 1 << 20, Inodes: 1}},
	})
	// 10Mi of layers, 2Mi of logs, 6Mi of volumes.
	if got.EphemeralStorage.Cmp(*quantity("18Mi")) != 0 || got.Inodes.Value() != 110 {
		t.Errorf("pod usage %s and %s inodes, want 18Mi and 110", got.EphemeralStorage, got.Inodes)
	}
	if got.Containers[0].EphemeralStorage.Cmp(*quantity("9Mi")) != 0 || got.Containers[1].EphemeralStorage.Cmp(*quantity("2Mi")) != 0 {
		t.Errorf("containers' usage %s and %s, want 9Mi (layer and logs) and 2Mi", got.Containers[0].EphemeralStorage, got.Containers[1].EphemeralStorage)
	}
	if u.Containers[0].EphemeralStorage.Cmp(*quantity("8Mi")) != 0 || u.EphemeralStorage.Cmp(*quantity("10Mi")) != 0 {
		t.Errorf("the usage passed in changed: %s, %s", u.Containers[0].EphemeralStorage, u.EphemeralStorage)
	}
}

func TestLocalStorageViolation(t *testing.T) {
	limits := func(storage string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(storage)}}
	}
	// A pod with a 100Mi scratch emptyDir, an app limited to 200Mi and an
	// unlimited helper, using well within all of it.
	base := func() (*corev1.Pod, PodUsage) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "p"},
			Spec: corev1.PodSpec{
				Volumes: []corev1.Volume{
					{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("100Mi"))}}},
					{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				},
				Containers: []corev1.Container{{Name: "app", Resources: limits("200Mi")}, {Name: "helper"}},
			},
		}
		usage := PodUsage{
			EphemeralStorage: quantity("60Mi"),
			Containers:       []ContainerUsage{{Name: "app", EphemeralStorage: quantity("20Mi")}, {Name: "helper", EphemeralStorage: quantity("10Mi")}},
			Volumes:          map[string]DiskUsage{"scratch": {Bytes: 30 << 20}},
		}
		return pod, usage
	}
	for name, tc := range map[string]struct {
		mutate      func(*corev1.Pod, *PodUsage)
		unmeasured  bool
		wantMessage string
		wantSignal  Signal
	}{
		"within every limit": {},
		"not measured": {
			mutate:     func(_ *corev1.Pod, u *PodUsage) { u.Volumes["scratch"] = DiskUsage{Bytes: 1 << 30} },
			unmeasured: true,
		},
		"an emptyDir over its sizeLimit": {
			mutate:      func(_ *corev1.Pod, u *PodUsage) { u.Volumes["scratch"] = DiskUsage{Bytes: 101 << 20} },
			wantMessage: `Usage of EmptyDir volume "scratch" exceeds the limit "100Mi". `,
			wantSignal:  SignalEmptyDirFsLimit,
		},
		"an emptyDir at its sizeLimit is within it": {
			mutate: func(_ *corev1.Pod, u *PodUsage) { u.Volumes["scratch"] = DiskUsage{Bytes: 100 << 20} },
		},
		"the pod over its containers' limits summed (the unlimited helper adds nothing)": {
			mutate:      func(_ *corev1.Pod, u *PodUsage) { u.EphemeralStorage = quantity("201Mi") },
			wantMessage: "Pod ephemeral local storage usage exceeds the total limit of containers 200Mi. ",
			wantSignal:  SignalEphemeralPodFsLimit,
		},
		"the pod-level limit before the containers'": {
			mutate: func(p *corev1.Pod, u *PodUsage) {
				p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("50Mi")}}
			},
			wantMessage: "Pod ephemeral local storage usage exceeds the total limit of containers 50Mi. ",
			wantSignal:  SignalEphemeralPodFsLimit,
		},
		"a container over its own limit": {
			mutate: func(p *corev1.Pod, u *PodUsage) {
				p.Spec.Containers[1].Resources = limits("5Mi")
			},
			wantMessage: `Container helper exceeded its local ephemeral storage limit "5Mi". `,
			wantSignal:  SignalEphemeralContainerFsLimit,
		},
		"the emptyDir's limit is checked first": {
			mutate: func(p *corev1.Pod, u *PodUsage) {
				u.Volumes["scratch"] = DiskUsage{Bytes: 150 << 20}
				u.EphemeralStorage = quantity("300Mi")
			},
			wantMessage: `Usage of EmptyDir volume "scratch" exceeds the limit "100Mi". `,
			wantSignal:  SignalEmptyDirFsLimit,
		},
		"no limits at all": {
			mutate: func(p *corev1.Pod, u *PodUsage) {
				p.Spec.Volumes[0].EmptyDir.SizeLimit = nil
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
				u.EphemeralStorage = quantity("10Gi")
				u.Volumes["scratch"] = DiskUsage{Bytes: 5 << 30}
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			pod, u := base()
			if tc.mutate != nil {
				tc.mutate(pod, &u)
			}
			usage := Usage{pod.UID: u}
			if tc.unmeasured {
				usage = Usage{}
			}
			signal, message, ok := LocalStorageViolation(pod, usage)
			if ok != (tc.wantMessage != "") {
				t.Errorf("LocalStorageViolation() ok = %v, want %v", ok, !ok)
			}
			if signal != tc.wantSignal {
				t.Errorf("signal = %q, want %q", signal, tc.wantSignal)
			}
			if diff := cmp.Diff(tc.wantMessage, message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}
