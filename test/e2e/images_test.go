package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// dockerConfigSecret is a kubernetes.io/dockerconfigjson Secret with one
// login for registry.
func dockerConfigSecret(name, registry, user, password string) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{
			corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, registry, auth)),
		},
	}
}

// The stack's second registry answers only to its user. Every pod pulls
// with policy Always, so that each pull asks the registry, whatever an
// earlier pod left on the node.
func TestPrivateRegistryPullsWithImagePullSecretsOnly(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	ctx := t.Context()
	image := f.Env.PrivateImage
	f.createSecret(t, ns, dockerConfigSecret("regcred", f.Env.PrivateRegistry, f.Env.PrivateRegistryUser, f.Env.PrivateRegistryPassword))
	// A wrong password first: every login that serves the registry is
	// tried in turn.
	f.createSecret(t, ns, dockerConfigSecret("wrong", f.Env.PrivateRegistry, f.Env.PrivateRegistryUser, "not-the-password"))
	// The ServiceAccount admission plugin copies a ServiceAccount's pull
	// secrets into the pods that run as it.
	if _, err := f.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta:       metav1.ObjectMeta{Name: "builder"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ServiceAccount builder: %v", err)
	}

	privatePod := func(name string, secrets ...string) *corev1.Pod {
		pod := newPod(ns, name).withImage(image).obj()
		pod.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
		for _, s := range secrets {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
		return pod
	}
	withSecret := f.createPod(t, privatePod("with-secret", "wrong", "regcred"))
	without := f.createPod(t, privatePod("without"))
	viaAccount := privatePod("via-service-account")
	viaAccount.Spec.ServiceAccountName = "builder"
	viaAccount = f.createPod(t, viaAccount)

	t.Run("with the right login among the pod's secrets, the image is pulled", func(t *testing.T) {
		t.Parallel()
		pod := f.waitForPod(t, withSecret, podStartTimeout, "to be Running and Ready", runningAndReady)
		if id := containerStatus(pod, "app").ImageID; !strings.Contains(id, "sha256:") {
			t.Errorf("imageID = %q, want the runtime's digest", id)
		}
		pulled := f.waitForEvent(t, pod, "Pulled", "Successfully pulled image", 30*time.Second).Message
		pattern := regexp.MustCompile(`^Successfully pulled image "` + regexp.QuoteMeta(image) + `" in [0-9.]+m?s \([0-9.]+m?s including waiting\)\. Image size: [1-9][0-9]* bytes\.$`)
		if !pattern.MatchString(pulled) {
			t.Errorf("Pulled event %q, want the pull's durations and the image's size", pulled)
		}
		f.waitForEvent(t, pod, "Pulling", fmt.Sprintf("Pulling image %q", image), 30*time.Second)
	})

	t.Run("through the ServiceAccount's pull secrets, the image is pulled", func(t *testing.T) {
		t.Parallel()
		if refs := viaAccount.Spec.ImagePullSecrets; len(refs) != 1 || refs[0].Name != "regcred" {
			t.Errorf("the pod's imagePullSecrets after admission = %v, want the ServiceAccount's regcred", refs)
		}
		f.waitForPod(t, viaAccount, podStartTimeout, "to be Running and Ready", runningAndReady)
	})

	t.Run("without a login, the registry refuses: ErrImagePull then ImagePullBackOff, naming the 401", func(t *testing.T) {
		t.Parallel()
		sawErrImagePull := false
		last := f.waitForPod(t, without, 2*time.Minute, "to wait in ErrImagePull, then in ImagePullBackOff", func(p *corev1.Pod) (bool, error) {
			s := containerStatus(p, "app")
			if s == nil || s.State.Waiting == nil {
				return false, nil
			}
			switch w := s.State.Waiting; w.Reason {
			case "ErrImagePull":
				if !strings.Contains(w.Message, "401 Unauthorized") {
					return false, fmt.Errorf("ErrImagePull with message %q, want the registry's 401 Unauthorized", w.Message)
				}
				sawErrImagePull = true
			case "ImagePullBackOff":
				return sawErrImagePull, nil
			}
			return false, nil
		})
		want := fmt.Sprintf("Back-off pulling image %q: ErrImagePull: ", image)
		if msg := containerStatus(last, "app").State.Waiting.Message; !strings.HasPrefix(msg, want) || !strings.Contains(msg, "401 Unauthorized") {
			t.Errorf("ImagePullBackOff message %q, want it to start with %q and name the 401", msg, want)
		}
	})
}

func TestPullPolicyNeverRunsAPresentImageAndRefusesAnAbsentOne(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// The init container makes sure the image is present before the
	// container that may not pull it starts.
	present := newPod(ns, "present").withInitContainer("pull", "true").obj()
	present.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	present = f.createPod(t, present)
	f.waitForPod(t, present, podStartTimeout, "to be Running and Ready", runningAndReady)
	// The kubelet's words when it does not check the pod's credentials
	// against the image (KubeletEnsureSecretPulledImages), as nodelet does not.
	wantPulled := fmt.Sprintf("Container image %q already present on machine", busyboxImage)
	if pulled := f.waitForEvent(t, present, "Pulled", wantPulled, 30*time.Second); pulled.Message != wantPulled {
		t.Errorf("Pulled event = %q, want %q", pulled.Message, wantPulled)
	}

	image := f.Env.Registry + "/never-pulled:1"
	absent := newPod(ns, "absent").withImage(image).obj()
	absent.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	absent = f.createPod(t, absent)
	want := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
	f.waitForPod(t, absent, podStartTimeout, "to wait in ErrImageNeverPull", waitingWith("app", "ErrImageNeverPull", want))
	f.waitForEvent(t, absent, "ErrImageNeverPull", want, 30*time.Second)
}

// Each failed pull of a missing image waits out a back-off twice the one
// before (10s, 20s, ...), in ImagePullBackOff. The pulls are read from the
// runtime's log, which stamps when each started and failed.
func TestImagePullBackOffDoublesBetweenPulls(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	image := f.Env.Registry + "/nonexistent:" + ns
	pod := f.createPod(t, newPod(ns, "backoff").withImage(image).obj())

	// The pod's Pulling event counts the pulls; the runtime's log, read
	// once they are done, says when each ran.
	await.Eventually(t, 2*time.Minute, "three pulls", await.Condition(func(ctx context.Context) (bool, error) {
		events, err := f.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
		})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "Pulling" && e.Source.Component == "kubelet" && e.Count >= 3 {
				return true, nil
			}
		}
		return false, nil
	}))
	var pulls []runtimePull
	await.Eventually(t, 30*time.Second, "the runtime to log three failed pulls", await.Condition(func(ctx context.Context) (bool, error) {
		pulls = f.runtimePulls(t, image)
		return len(pulls) >= 3 && !pulls[2].failed.IsZero(), nil
	}))
	// A wait runs from a failure to the next pull's start. It is at least
	// the back-off; on a busy machine nodelet may come back a little late,
	// never as late as the next step of the sequence.
	for i, backOff := range []time.Duration{10 * time.Second, 20 * time.Second} {
		wait := pulls[i+1].started.Sub(pulls[i].failed)
		t.Logf("pull %d started %s after pull %d failed (back-off %s)", i+2, wait.Round(time.Millisecond), i+1, backOff)
		if wait < backOff || wait >= 2*backOff {
			t.Errorf("pull %d started %s after pull %d failed, want the %s back-off waited, and not the next one", i+2, wait, i+1, backOff)
		}
	}
	f.waitForPod(t, pod, 30*time.Second, "to show ImagePullBackOff", waitingWith("app", "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q: ErrImagePull: ", image)))
	f.waitForEvent(t, pod, "BackOff", fmt.Sprintf("Back-off pulling image %q", image), 30*time.Second)
	f.waitForEvent(t, pod, "Failed", fmt.Sprintf("Failed to pull image %q", image), 30*time.Second)
}

// runtimePull is one pull of an image as containerd logs it.
type runtimePull struct {
	started, failed time.Time
}

// runtimePulls reads the pulls of image from containerd's log, in order.
func (f *Framework) runtimePulls(t *testing.T, image string) []runtimePull {
	t.Helper()
	if f.Env.ContainerdLog == "" {
		t.Fatal("the stack's env file names no CONTAINERD_LOG")
	}
	data, err := os.ReadFile(f.Env.ContainerdLog)
	if err != nil {
		t.Fatalf("reading the runtime's log: %v", err)
	}
	started := fmt.Sprintf(`msg="PullImage \"%s\""`, image)
	failed := fmt.Sprintf(`msg="PullImage \"%s\" failed"`, image)
	var pulls []runtimePull
	for _, line := range strings.Split(string(data), "\n") {
		isStart, isFailure := strings.Contains(line, started), strings.Contains(line, failed)
		if !isStart && !isFailure {
			continue
		}
		stamp, _, _ := strings.Cut(strings.TrimPrefix(line, `time="`), `"`)
		when, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			t.Fatalf("runtime log line %q: %v", line, err)
		}
		switch {
		case isStart:
			pulls = append(pulls, runtimePull{started: when})
		case len(pulls) > 0:
			pulls[len(pulls)-1].failed = when
		}
	}
	return pulls
}

// A pod whose pull is slow (the registry, behind a proxy of the test's,
// answers manifest requests 3 s late) shows the kubelet's first status
// while it waits: Pending, its container in ContainerCreating, and
// PodReadyToStartContainers False; then it runs.
func TestSlowPullShowsContainerCreatingUntilTheContainerRuns(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	upstream := &url.URL{Scheme: "http", Host: f.Env.Registry}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/manifests/") {
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	// containerd speaks plain HTTP to a registry on a loopback address.
	image := strings.Replace(busyboxImage, f.Env.Registry, strings.TrimPrefix(slow.URL, "http://"), 1)
	pod := newPod(ns, "slow-pull").withImage(image).obj()
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	pod = f.createPod(t, pod)

	var sawCreating bool
	_, err := f.watchPod(t.Context(), pod, podStartTimeout, func(p *corev1.Pod) (bool, error) {
		if p.Status.Phase == corev1.PodPending && len(p.Status.ContainerStatuses) == 1 {
			waiting := p.Status.ContainerStatuses[0].State.Waiting
			notReady := false
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionFalse {
					notReady = true
				}
			}
			if waiting != nil && waiting.Reason == "ContainerCreating" && notReady {
				sawCreating = true
			}
		}
		if !sawCreating && p.Status.Phase == corev1.PodRunning {
			return false, fmt.Errorf("the pod runs without having shown Pending, ContainerCreating and PodReadyToStartContainers False")
		}
		return runningAndReady(p)
	})
	if err != nil {
		t.Fatal(err)
	}
}
