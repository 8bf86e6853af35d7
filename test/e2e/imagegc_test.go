package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestImageGarbageCollectionRemovesUnusedImages restarts nodelet with
// thresholds that make it collect every unused image at once, so it must
// run alone: it does not call t.Parallel (see main_test.go). Images it
// removes are pulled again from the local registry by the tests that use
// them.
func TestImageGarbageCollectionRemovesUnusedImages(t *testing.T) {
	ns := f.NewNamespace(t)
	images, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(f.Env.CRIEndpoint).WithConnectionTimeout(30 * time.Second).Build(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// An image of its own (busybox with another config, so another image
	// ID), run by a pod that is then deleted.
	unused := f.pushImageVariant(t, "gc-target", ns)
	gone := f.createPod(t, newPod(ns, "gone").withImage(unused).obj())
	f.waitForPod(t, gone, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.deletePod(t, gone, ptr.To[int64](0))
	f.waitForPodGone(t, gone, time.Minute)
	await.Eventually(t, time.Minute, "the deleted pod's containers to be removed", func(ctx context.Context) error {
		containers, err := f.listContainers(ctx, gone.UID, "")
		if err != nil {
			return err
		}
		if len(containers) > 0 {
			return fmt.Errorf("containers %v", containers)
		}
		return nil
	})
	if !hasImage(t, images, unused) {
		t.Fatalf("image %s is not in the runtime after its pod ran", unused)
	}
	// A running pod, whose image stays.
	running := f.createPod(t, newPod(ns, "running").obj())
	f.waitForPod(t, running, podStartTimeout, "to be Running and Ready", runningAndReady)

	f.restartNodeletWith(t, "--image-gc-high-threshold=1", "--image-gc-low-threshold=0", "--image-minimum-gc-age=0s")
	await.Eventually(t, time.Minute, "image "+unused+" to be removed", func(ctx context.Context) error {
		if hasImage(t, images, unused) {
			return fmt.Errorf("image %s is still there", unused)
		}
		return nil
	})
	if f.Env.PauseImage == "" {
		t.Fatal("the stack's environment names no pause image")
	}
	for _, kept := range []string{busyboxImage, f.Env.PauseImage} {
		if !hasImage(t, images, kept) {
			t.Errorf("image %s was removed; the images of running containers and the sandbox image stay", kept)
		}
	}
	// The disk is far above 0% used: collection could not free enough,
	// which the kubelet reports on the Node.
	await.Eventually(t, time.Minute, "a FreeDiskSpaceFailed event on the node", func(ctx context.Context) error {
		events, err := f.Client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Node", "involvedObject.name": f.Env.NodeName, "reason": "FreeDiskSpaceFailed"}.String(),
		})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if strings.HasPrefix(e.Message, "Insufficient free disk space on the node's image filesystem (") && e.Source.Component == "kubelet" {
				return nil
			}
		}
		return fmt.Errorf("%d FreeDiskSpaceFailed events, none with the kubelet's message", len(events.Items))
	})
}

func hasImage(t *testing.T, images interface {
	ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
}, name string) bool {
	t.Helper()
	list, err := images.ListImages(t.Context(), nil)
	if err != nil {
		t.Fatalf("listing images: %v", err)
	}
	for _, image := range list {
		if slices.Contains(image.RepoTags, name) || image.Id == name {
			return true
		}
	}
	return false
}

// pushImageVariant pushes to the stack's registry, as repository:tag, the
// busybox image with a label added to its config: the same layers (mounted
// from busybox), another image ID. It returns the image's name.
func (f *Framework) pushImageVariant(t *testing.T, repository, tag string) string {
	t.Helper()
	base := "http://" + f.Env.Registry + "/v2/"
	busyboxTag := busyboxImage[strings.LastIndex(busyboxImage, ":")+1:]
	manifestType := "application/vnd.oci.image.manifest.v1+json"

	var manifest map[string]any
	f.registryJSON(t, http.MethodGet, base+"busybox/manifests/"+busyboxTag, manifestType, nil, &manifest)
	if mt, _ := manifest["mediaType"].(string); mt != "" {
		manifestType = mt
	}
	configDesc := manifest["config"].(map[string]any)
	var config map[string]any
	f.registryJSON(t, http.MethodGet, base+"busybox/blobs/"+configDesc["digest"].(string), "", nil, &config)
	inner, _ := config["config"].(map[string]any)
	if inner == nil {
		inner = map[string]any{}
		config["config"] = inner
	}
	labels, _ := inner["Labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels["dev.nodelet.e2e"] = tag
	inner["Labels"] = labels
	configData, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	configDigest := fmt.Sprintf("sha256:%x", sha256.Sum256(configData))

	for _, layer := range manifest["layers"].([]any) {
		digest := layer.(map[string]any)["digest"].(string)
		f.registryDo(t, http.MethodPost, base+repository+"/blobs/uploads/?mount="+url.QueryEscape(digest)+"&from=busybox", "", nil, http.StatusCreated)
	}
	location := f.registryDo(t, http.MethodPost, base+repository+"/blobs/uploads/", "", nil, http.StatusAccepted).Get("Location")
	upload, err := url.Parse(location)
	if err != nil {
		t.Fatal(err)
	}
	if !upload.IsAbs() {
		upload = (&url.URL{Scheme: "http", Host: f.Env.Registry}).ResolveReference(upload)
	}
	query := upload.Query()
	query.Set("digest", configDigest)
	upload.RawQuery = query.Encode()
	f.registryDo(t, http.MethodPut, upload.String(), "application/octet-stream", configData, http.StatusCreated)

	configDesc["digest"], configDesc["size"] = configDigest, len(configData)
	manifestData, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	f.registryDo(t, http.MethodPut, base+repository+"/manifests/"+tag, manifestType, manifestData, http.StatusCreated)
	return f.Env.Registry + "/" + repository + ":" + tag
}

func (f *Framework) registryJSON(t *testing.T, method, u, accept string, body []byte, into any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s %s", method, u, resp.Status, data)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
}

func (f *Framework) registryDo(t *testing.T, method, u, contentType string, body []byte, want int) http.Header {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s %s, want %d", method, u, resp.Status, data, want)
	}
	return resp.Header
}
