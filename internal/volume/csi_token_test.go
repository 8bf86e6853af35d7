package volume

// Unit tests of the CSIDriver's tokenRequests and requiresRepublish: the
// tokens NodePublishVolume carries (from client-go's fake clientset's
// TokenRequests, tokenIssuer) and the calls made again as the fake clock
// moves, against the in-process fake node service (fakeCSINode).

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func (f *fakeCSINode) takePublishes() []*csipb.NodePublishVolumeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.publishes
	f.publishes = nil
	return out
}

// publishedTokens reads the tokens attribute of a publish call.
func publishedTokens(t *testing.T, attributes map[string]string) map[string]authenticationv1.TokenRequestStatus {
	t.Helper()
	value, ok := attributes[csiServiceAccountTokens]
	if !ok {
		t.Fatalf("no %s in %v", csiServiceAccountTokens, attributes)
	}
	var tokens map[string]authenticationv1.TokenRequestStatus
	if err := json.Unmarshal([]byte(value), &tokens); err != nil {
		t.Fatalf("%s = %q: %v", csiServiceAccountTokens, value, err)
	}
	return tokens
}

func TestCSIDriverGetsThePodsTokensAndIsRepublished(t *testing.T) {
	node := &fakeCSINode{}
	objects := csiClaimObjects()
	objects[2] = csiDriverObject(func(s *storagev1.CSIDriverSpec) {
		s.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "", ExpirationSeconds: ptr.To[int64](600)}}
		s.RequiresRepublish = ptr.To(true)
	})
	e := newTestEnv(t, Options{CSI: &fakeCSIDrivers{node: node, registered: true}, NodeName: "node-1"}, objects...)
	pod := csiClaimPod("uid-1")
	pod.Spec.ServiceAccountName = "web"

	_, refreshAt := setUp(t, e, pod)
	if want := start.Add(DefaultSyncPeriod); !refreshAt.Equal(want) {
		t.Errorf("refreshAt = %v, want the republish at %v", refreshAt, want)
	}
	publishes := node.takePublishes()
	if len(publishes) != 1 {
		t.Fatalf("%d NodePublishVolume calls, want 1", len(publishes))
	}
	want := map[string]authenticationv1.TokenRequestStatus{
		"vault": {Token: "token-1", ExpirationTimestamp: metav1.NewTime(start.Add(time.Hour))},
		"":      {Token: "token-2", ExpirationTimestamp: metav1.NewTime(start.Add(10 * time.Minute))},
	}
	if diff := cmp.Diff(want, publishedTokens(t, publishes[0].VolumeContext)); diff != "" {
		t.Errorf("tokens in the volume context (-want +got):\n%s", diff)
	}
	if publishes[0].VolumeContext["size"] != "1Gi" {
		t.Errorf("volume context %v lost the volume's attributes", publishes[0].VolumeContext)
	}
	calls := e.tokens.calls()
	if len(calls) != 2 {
		t.Fatalf("token requests %+v, want 2", calls)
	}
	for _, c := range calls {
		if c.Namespace != "shop" || c.ServiceAccount != "web" || c.Spec.BoundObjectRef == nil || c.Spec.BoundObjectRef.UID != pod.UID {
			t.Errorf("token request %+v, want the pod's service account shop/web, bound to the pod", c)
		}
	}
	if diff := cmp.Diff([]string{"vault"}, calls[0].Spec.Audiences); diff != "" || len(calls[1].Spec.Audiences) != 0 {
		t.Errorf("audiences %v and %v, want vault and none (the API server's)", calls[0].Spec.Audiences, calls[1].Spec.Audiences)
	}

	// The resync republishes, with the tokens held: none is due yet.
	e.clock.Step(DefaultSyncPeriod)
	setUp(t, e, pod)
	publishes = node.takePublishes()
	if len(publishes) != 1 {
		t.Fatalf("%d NodePublishVolume calls at the resync, want 1", len(publishes))
	}
	if diff := cmp.Diff(want, publishedTokens(t, publishes[0].VolumeContext)); diff != "" {
		t.Errorf("tokens republished (-want +got):\n%s", diff)
	}
	// Past 80% of the 10-minute token's life, it is replaced; the
	// hour-long one is kept. A failed refresh keeps the current token.
	e.clock.Step(8 * time.Minute)
	e.tokens.fail(errors.New("the API server is away"))
	setUp(t, e, pod)
	if got := publishedTokens(t, node.takePublishes()[0].VolumeContext)[""].Token; got != "token-2" {
		t.Errorf("token after a failed refresh = %s, want the current token-2 kept", got)
	}
	e.tokens.fail(nil)
	e.clock.Step(DefaultSyncPeriod)
	setUp(t, e, pod)
	got := publishedTokens(t, node.takePublishes()[0].VolumeContext)
	if got[""].Token != "token-3" || got["vault"].Token != "token-1" {
		t.Errorf("tokens after 8 minutes: %v, want the short-lived one replaced (token-3), vault's kept", got)
	}
	if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
}

func TestCSITokensInSecretsAndATokenThatCannotBeHad(t *testing.T) {
	node := &fakeCSINode{}
	objects := csiClaimObjects()
	objects[2] = csiDriverObject(func(s *storagev1.CSIDriverSpec) {
		s.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}}
		s.ServiceAccountTokenInSecrets = ptr.To(true)
	})
	e := newTestEnv(t, Options{CSI: &fakeCSIDrivers{node: node, registered: true}, NodeName: "node-1"}, objects...)
	pod := csiClaimPod("uid-1")

	e.tokens.fail(errors.New("forbidden"))
	_, _, err := e.m.SetUpPod(context.Background(), pod)
	if want := `MountVolume.SetUp failed for volume "pv-1" : failed to get service account token attributes: failed to fetch token for audience "vault": forbidden`; err == nil || err.Error() != want || !IsUserError(err) {
		t.Fatalf("error = %v, want a user error %s", err, want)
	}
	if got := node.takePublishes(); len(got) != 0 {
		t.Errorf("published without its tokens: %v", got)
	}

	e.tokens.fail(nil)
	_, refreshAt := setUp(t, e, pod)
	if !refreshAt.IsZero() {
		t.Errorf("refreshAt = %v, want none: the driver does not require republishing", refreshAt)
	}
	publishes := node.takePublishes()
	if len(publishes) != 1 {
		t.Fatalf("%d NodePublishVolume calls, want 1", len(publishes))
	}
	if _, ok := publishes[0].VolumeContext[csiServiceAccountTokens]; ok {
		t.Errorf("tokens in the volume context %v, want them in the secrets only", publishes[0].VolumeContext)
	}
	if got := publishedTokens(t, publishes[0].Secrets)["vault"].Token; got != "token-1" {
		t.Errorf("vault's token in the secrets = %q, want token-1", got)
	}
}
