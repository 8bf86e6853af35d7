package runtime

// The pod's IPs reach the env of its containers through SyncPod, against
// the stateful CRI fakes (whose sandboxes get critest.FakePodSandboxIPs).

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

func TestSyncPodGivesContainersThePodsIPs(t *testing.T) {
	hostIPs := []string{"192.0.2.10"}
	cases := map[string]struct {
		hostNetwork bool
		// secondSync restarts the container in the sandbox the first
		// sync created, whose IPs then come from the runtime's record.
		secondSync bool
		want       string
	}{
		"a new sandbox's IP":                   {want: critest.FakePodSandboxIPs[0]},
		"a kept sandbox's IP":                  {secondSync: true, want: critest.FakePodSandboxIPs[0]},
		"the node's IP on the host's network":  {hostNetwork: true, want: hostIPs[0]},
		"the node's IP in a kept host sandbox": {hostNetwork: true, secondSync: true, want: hostIPs[0]},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newSyncTestEnv(t)
			ctx := context.Background()
			pod := syncTestPod()
			pod.Spec.HostNetwork = tc.hostNetwork
			pod.Spec.Containers[0].Env = []corev1.EnvVar{
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			}
			env := &PodEnv{PodDir: t.TempDir(), HostIPs: hostIPs}

			// sync runs one sync that starts the container and returns the
			// POD_IP of the instance it created.
			seen := map[string]bool{}
			sync := func() string {
				t.Helper()
				status, err := e.m.GetPodStatus(ctx, pod.UID)
				if err != nil {
					t.Fatal(err)
				}
				result := e.m.SyncPod(ctx, pod, status, ComputePodActions(pod, status, nil, e.clock.Now()), env)
				if result.Err != nil || len(result.Started) != 1 {
					t.Fatalf("SyncPod() = %+v, want the container started", result)
				}
				containers, err := e.runtime.ListContainers(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				value := "<no new container>"
				for _, c := range containers {
					if seen[c.Id] {
						continue
					}
					seen[c.Id] = true
					value = "<unset>"
					for _, kv := range e.runtime.configs[c.Id].GetEnvs() {
						if kv.Key == "POD_IP" {
							value = string(kv.Value)
						}
					}
				}
				return value
			}

			got := sync()
			if tc.secondSync {
				containers, _ := e.runtime.ListContainers(ctx, nil)
				if err := e.runtime.StopContainer(ctx, containers[0].Id, 0); err != nil {
					t.Fatal(err)
				}
				got = sync()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("POD_IP (-want +got):\n%s", diff)
			}
		})
	}
}
