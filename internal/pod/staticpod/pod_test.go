package staticpod

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// TestKubeadmManifests reads the manifests kubeadm writes and checks each
// comes out as the node runs it: named for the node, bound to it,
// annotated, tolerating NoExecute, with the defaults nodelet reads.
func TestKubeadmManifests(t *testing.T) {
	files, err := filepath.Glob("testdata/kubeadm/*.yaml")
	if err != nil || len(files) != 4 {
		t.Fatalf("kubeadm manifests: %v %v", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			pods, errs := ReadPath(file, "Node-A")
			if len(errs) > 0 || len(pods) != 1 {
				t.Fatalf("ReadPath: pods %d, errors %v", len(pods), errs)
			}
			pod := pods[0]
			component := strings.TrimSuffix(filepath.Base(file), ".yaml")
			if pod.Name != component+"-node-a" || pod.Namespace != "kube-system" || pod.Spec.NodeName != "Node-A" {
				t.Errorf("name %s/%s on %q, want kube-system/%s-node-a on Node-A", pod.Namespace, pod.Name, pod.Spec.NodeName, component)
			}
			if pod.UID == "" || pod.Annotations[podutil.ConfigHashAnnotation] != string(pod.UID) || pod.Annotations[podutil.ConfigSourceAnnotation] != "file" {
				t.Errorf("UID %q, annotations %v", pod.UID, pod.Annotations)
			}
			if !podutil.IsStaticPod(pod) || !podutil.IsCritical(pod) {
				t.Error("not a critical static pod")
			}
			wantToleration := corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
			if !slicesContains(pod.Spec.Tolerations, wantToleration) {
				t.Errorf("tolerations %v, want %v among them", pod.Spec.Tolerations, wantToleration)
			}
			c := pod.Spec.Containers[0]
			if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways || pod.Spec.DNSPolicy != corev1.DNSClusterFirst ||
				ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 0) != 30 || !ptr.Deref(pod.Spec.EnableServiceLinks, false) ||
				c.TerminationMessagePath != "/dev/termination-log" || c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
				t.Errorf("pod defaults not applied: %+v", pod.Spec)
			}
			if p := c.LivenessProbe; p == nil || p.SuccessThreshold != 1 || p.HTTPGet.Scheme == "" {
				t.Errorf("liveness probe %+v, want defaulted", p)
			}
			for _, v := range pod.Spec.Volumes {
				if v.HostPath == nil || v.HostPath.Type == nil {
					t.Errorf("volume %s: hostPath type not defaulted", v.Name)
				}
			}
			if pod.Status.Phase != corev1.PodPending {
				t.Errorf("phase %q, want Pending", pod.Status.Phase)
			}
		})
	}
}

func slicesContains(ts []corev1.Toleration, want corev1.Toleration) bool {
	for _, t := range ts {
		if t == want {
			return true
		}
	}
	return false
}

const busybox = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: c
    image: busybox
    ports:
    - containerPort: 80
    resources:
      limits: {cpu: 100m}
    readinessProbe:
      httpGet: {port: 80}
`

// TestDecode covers what a manifest may hold and how it comes out.
func TestDecode(t *testing.T) {
	file := Source{Kind: podutil.FileSource, Name: "/etc/kubernetes/manifests/web.yaml"}
	tests := map[string]struct {
		data    string
		source  Source
		list    bool
		wantErr string
		check   func(t *testing.T, pods []*corev1.Pod)
	}{
		"a pod without namespace lands in default, defaulted as the API server would": {data: busybox, source: file, check: func(t *testing.T, pods []*corev1.Pod) {
			pod := pods[0]
			if pod.Namespace != "default" || pod.Name != "web-n1" {
				t.Errorf("pod %s/%s, want default/web-n1", pod.Namespace, pod.Name)
			}
			c := pod.Spec.Containers[0]
			want := corev1.Container{
				Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullAlways,
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Limits:   c.Resources.Limits,
					Requests: c.Resources.Limits,
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
				},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}
			if diff := cmp.Diff(want, c); diff != "" {
				t.Errorf("container (-want +got):\n%s", diff)
			}
		}},
		"JSON reads as YAML does": {data: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j","namespace":"ns"},"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}`, source: file, check: func(t *testing.T, pods []*corev1.Pod) {
			if pods[0].Name != "j-n1" || pods[0].Namespace != "ns" || pods[0].Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("pod %s/%s pull %s", pods[0].Namespace, pods[0].Name, pods[0].Spec.Containers[0].ImagePullPolicy)
			}
		}},
		"a URL's pod tolerates nothing more than it asks": {data: busybox, source: Source{Kind: podutil.HTTPSource, Name: "http://c/p"}, check: func(t *testing.T, pods []*corev1.Pod) {
			if len(pods[0].Spec.Tolerations) != 0 || pods[0].Annotations[podutil.ConfigSourceAnnotation] != "http" {
				t.Errorf("tolerations %v, source %q", pods[0].Spec.Tolerations, pods[0].Annotations[podutil.ConfigSourceAnnotation])
			}
		}},
		"a PodList from a URL": {list: true, source: Source{Kind: podutil.HTTPSource, Name: "http://c/p"},
			data: `{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}},{"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}`,
			check: func(t *testing.T, pods []*corev1.Pod) {
				if len(pods) != 2 || pods[0].Name != "a-n1" || pods[1].Name != "b-n1" || pods[0].UID == pods[1].UID {
					t.Errorf("pods %v", pods)
				}
			}},
		"a PodList in a file":        {data: `{"apiVersion":"v1","kind":"PodList","items":[]}`, source: file, wantErr: `kind "PodList" is not a Pod`},
		"a Deployment":               {data: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", source: file, wantErr: "apiVersion"},
		"no name":                    {data: "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: c, image: i}]\n", source: file, wantErr: "name is needed"},
		"no containers":              {data: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n", source: file, wantErr: "spec.containers: Required value"},
		"two containers of one name": {data: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i}, {name: c, image: i}]\n", source: file, wantErr: "Duplicate value"},
		"a Secret volume":            {data: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i}]\n  volumes: [{name: s, secret: {secretName: s}}]\n", source: file, wantErr: "static pods may not reference secrets (via secret volumes)"},
		"a service account":          {data: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  serviceAccountName: sa\n  containers: [{name: c, image: i}]\n", source: file, wantErr: "static pods may not reference serviceaccounts"},
		"not YAML":                   {data: "{{{", source: file, wantErr: "web.yaml"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pods, err := Decode([]byte(tc.data), tc.source, "n1", tc.list)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, pods)
		})
	}
}

// TestUIDIsTheKubeletsHash: the UID depends on the manifest, the node and
// the source, and only on them.
func TestUIDIsTheKubeletsHash(t *testing.T) {
	decode := func(data, node, path string) string {
		pods, err := Decode([]byte(data), Source{Kind: podutil.FileSource, Name: path}, node, false)
		if err != nil {
			t.Fatal(err)
		}
		return string(pods[0].UID)
	}
	base := decode(busybox, "n1", "/m/web.yaml")
	if again := decode(busybox, "n1", "/m/web.yaml"); again != base {
		t.Errorf("same manifest read twice: UIDs %s and %s", base, again)
	}
	for name, uid := range map[string]string{
		"another node":    decode(busybox, "n2", "/m/web.yaml"),
		"another file":    decode(busybox, "n1", "/m/web2.yaml"),
		"an edited image": decode(strings.Replace(busybox, "image: busybox", "image: busybox:1.37", 1), "n1", "/m/web.yaml"),
	} {
		if uid == base {
			t.Errorf("%s: same UID %s", name, uid)
		}
	}
}

// TestReadPathSkipsHiddenFilesFoldersAndBadManifests: the other pods run.
func TestReadPathSkipsHiddenFilesFoldersAndBadManifests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("web.yaml", busybox)
	write(".web.yaml.swp", strings.Replace(busybox, "name: web", "name: hidden", 1))
	write("broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	pods, errs := ReadPath(dir, "n1")
	if len(pods) != 1 || pods[0].Name != "web-n1" {
		t.Errorf("pods %v, want web-n1 alone", pods)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "broken.yaml") {
		t.Errorf("errors %v, want one naming broken.yaml", errs)
	}
	if pods, errs := ReadPath(filepath.Join(dir, "missing"), "n1"); len(pods)+len(errs) != 0 {
		t.Errorf("a missing folder: pods %v errors %v, want none", pods, errs)
	}
}
