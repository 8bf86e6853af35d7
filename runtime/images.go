package runtime

import (
	"context"
	// Digests in image references are checked with these hashes.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// ReasonImageInspectError is the waiting reason when the runtime cannot
// tell whether an image is present.
const ReasonImageInspectError = "ImageInspectError"

// Image pull back-off, as the kubelet's: 10s doubling up to 5 minutes, per
// pod and image, forgotten after twice the maximum without a failure.
const (
	initialImagePullBackoff = 10 * time.Second
	maxImagePullBackoff     = 300 * time.Second
)

// imagePuller makes sure a container's image is present before the
// container is created, with the kubelet's pull policies, events and
// back-off. Pulls of different images or pods run concurrently; no lock is
// held while the runtime pulls.
type imagePuller struct {
	images   cri.ImageManagerService
	recorder record.EventRecorder
	clock    clock.Clock
	backoff  *flowcontrol.Backoff

	mu sync.Mutex
	// lastError is each back-off key's latest pull failure, shown with the
	// back-off message so that users see why.
	lastError map[string]string
	// backOffUntil is when each back-off key's current back-off ends.
	backOffUntil map[string]time.Time
	// pulls are the pulls running now, by back-off key.
	pulls map[string]*pull
	// users are the users of the images ensureImage returned, by image ID.
	users map[string]imageUser
}

// pull is one pull, shared by whoever asks for the same image of the same
// pod while it runs.
type pull struct {
	done   chan struct{}
	result pullResult
	// waiters counts the callers sharing this pull besides its owner.
	waiters int
}

type pullResult struct {
	imageRef string
	size     uint64
	duration time.Duration
	err      error
}

func newImagePuller(images cri.ImageManagerService, recorder record.EventRecorder, clk clock.Clock) *imagePuller {
	backoff := flowcontrol.NewBackOff(initialImagePullBackoff, maxImagePullBackoff)
	backoff.Clock = clk
	return &imagePuller{
		images:       images,
		recorder:     recorder,
		clock:        clk,
		backoff:      backoff,
		lastError:    map[string]string{},
		backOffUntil: map[string]time.Time{},
		pulls:        map[string]*pull{},
		users:        map[string]imageUser{},
	}
}

// ensureImage returns the runtime's reference (ID) of the container's
// image, pulling it when the pull policy says so, or the reason it cannot.
// A pull logs in with the credentials in pullSecrets (the pod's
// imagePullSecrets) that serve the image's registry. Events go to ref, the
// container.
func (p *imagePuller) ensureImage(ctx context.Context, ref *corev1.ObjectReference, pod *corev1.Pod, container *corev1.Container, sandboxConfig *runtimeapi.PodSandboxConfig, pullSecrets []corev1.Secret) (string, *kubecontainer.ContainerError) {
	requested := container.Image
	image, err := applyDefaultImageTag(requested)
	if err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", requested, err)
		p.recorder.Event(ref, corev1.EventTypeWarning, "InspectFailed", msg)
		return "", &kubecontainer.ContainerError{Reason: kubecontainer.ReasonInvalidImageName, Message: msg}
	}
	spec := &runtimeapi.ImageSpec{Image: image, Annotations: pod.Annotations}
	policy := pullPolicy(container.ImagePullPolicy, image)

	if policy != corev1.PullAlways {
		resp, err := p.images.ImageStatus(ctx, spec, false)
		if err != nil {
			msg := fmt.Sprintf("Failed to inspect image %q: %v", requested, err)
			p.recorder.Event(ref, corev1.EventTypeWarning, "InspectFailed", msg)
			return "", &kubecontainer.ContainerError{Reason: ReasonImageInspectError, Message: msg}
		}
		if present := resp.GetImage(); present.GetId() != "" {
			p.rememberUser(present)
			// The kubelet's words without KubeletEnsureSecretPulledImages:
			// nodelet does not check that this pod's credentials could pull
			// the image, so it does not say it can access it.
			p.recorder.Event(ref, corev1.EventTypeNormal, "Pulled",
				fmt.Sprintf("Container image %q already present on machine", requested))
			return present.GetId(), nil
		}
		if policy == corev1.PullNever {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", requested)
			p.recorder.Event(ref, corev1.EventTypeWarning, "ErrImageNeverPull", msg)
			return "", &kubecontainer.ContainerError{Reason: kubecontainer.ReasonErrImageNeverPull, Message: msg}
		}
	}

	key := string(pod.UID) + "_" + requested
	if p.backoff.IsInBackOffSinceUpdate(key, p.clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", requested)
		p.recorder.Event(ref, corev1.EventTypeNormal, "BackOff", msg)
		p.mu.Lock()
		if last, ok := p.lastError[key]; ok {
			msg = msg + ": " + last
		}
		until := p.backOffUntil[key]
		p.mu.Unlock()
		return "", &kubecontainer.ContainerError{Reason: kubecontainer.ReasonImagePullBackOff, Message: msg, BackOffUntil: until}
	}

	creds, credErrs := credentialsFromSecrets(pullSecrets)
	for _, err := range credErrs {
		klog.FromContext(ctx).Info("Ignored an unreadable image pull secret", "pod", klog.KObj(pod), "err", err.Error())
	}
	auths := pullCredentials(creds, image)

	p.recorder.Event(ref, corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", requested))
	start := p.clock.Now()
	result, owner := p.pullShared(ctx, key, spec, auths, sandboxConfig)
	if result.err != nil {
		p.recorder.Event(ref, corev1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %v", requested, result.err))
		reason, msg := pullFailure(requested, result.err)
		// A shared pull failed once: only its owner counts it.
		p.mu.Lock()
		defer p.mu.Unlock()
		if owner {
			now := p.clock.Now()
			p.backoff.Next(key, now)
			p.lastError[key] = reason + ": " + msg
			p.backOffUntil[key] = now.Add(p.backoff.Get(key))
		}
		return "", &kubecontainer.ContainerError{Reason: reason, Message: msg, BackOffUntil: p.backOffUntil[key]}
	}
	p.recorder.Event(ref, corev1.EventTypeNormal, "Pulled",
		fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
			requested, result.duration.Truncate(time.Millisecond), p.clock.Since(start).Truncate(time.Millisecond), result.size))
	if owner {
		p.backoff.Reset(key)
		p.forgetExpired()
	}
	return result.imageRef, nil
}

// forgetExpired drops the back-off and last error of pulls that have not
// failed for twice the maximum back-off, such as those of deleted pods.
func (p *imagePuller) forgetExpired() {
	p.backoff.GC()
	p.mu.Lock()
	defer p.mu.Unlock()
	for key := range p.lastError {
		if p.backoff.Get(key) == 0 {
			delete(p.lastError, key)
			delete(p.backOffUntil, key)
		}
	}
}

// pullShared pulls an image, or waits for the pull of it already running
// for the same key. owner is true for the caller that ran the pull.
func (p *imagePuller) pullShared(ctx context.Context, key string, spec *runtimeapi.ImageSpec, auths []*runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (result pullResult, owner bool) {
	p.mu.Lock()
	if running, ok := p.pulls[key]; ok {
		running.waiters++
		p.mu.Unlock()
		select {
		case <-running.done:
			return running.result, false
		case <-ctx.Done():
			return pullResult{err: ctx.Err()}, false
		}
	}
	current := &pull{done: make(chan struct{})}
	p.pulls[key] = current
	p.mu.Unlock()

	current.result = p.pullImage(ctx, spec, auths, sandboxConfig)

	p.mu.Lock()
	delete(p.pulls, key)
	p.mu.Unlock()
	close(current.done)
	return current.result, true
}

// pullImage runs a CRI pull, then asks the image's size and user. With
// credentials, it tries each in turn until one pulls, as the kubelet does;
// without, the runtime's own configuration applies.
func (p *imagePuller) pullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auths []*runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) pullResult {
	start := p.clock.Now()
	imageRef, err := p.pullWithCredentials(ctx, spec, auths, sandboxConfig)
	if err != nil {
		return pullResult{err: err}
	}
	result := pullResult{imageRef: imageRef, duration: p.clock.Since(start)}
	resp, err := p.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: imageRef, Annotations: spec.Annotations}, false)
	switch {
	case err != nil:
		// The size is only for the event; the user is asked again on the
		// next ensureImage, where the image is then present.
		klog.FromContext(ctx).Error(err, "Failed to get the status of a pulled image", "image", spec.Image, "imageRef", imageRef)
	case resp.GetImage() != nil:
		result.size = resp.GetImage().GetSize()
		p.rememberUser(resp.GetImage())
	}
	return result
}

func (p *imagePuller) pullWithCredentials(ctx context.Context, spec *runtimeapi.ImageSpec, auths []*runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if len(auths) == 0 {
		return p.images.PullImage(ctx, spec, nil, sandboxConfig)
	}
	var errs []error
	for _, auth := range auths {
		imageRef, err := p.images.PullImage(ctx, spec, auth, sandboxConfig)
		if err == nil {
			return imageRef, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return "", errs[0]
	}
	return "", utilerrors.NewAggregate(errs)
}

// rememberUser keeps the image's user for the runAsNonRoot check of
// containers created from it. An image ID names one image forever, so the
// entry never goes stale.
func (p *imagePuller) rememberUser(image *runtimeapi.Image) {
	user := imageUser{Username: image.GetUsername()}
	if uid := image.GetUid(); uid != nil {
		value := uid.GetValue()
		user.UID = &value
	}
	// An image that names no user runs as root.
	if user.UID == nil && user.Username == "" {
		user.UID = new(int64)
	}
	p.mu.Lock()
	p.users[image.GetId()] = user
	p.mu.Unlock()
}

// user returns the user of an image ensureImage returned, or nil.
func (p *imagePuller) user(imageRef string) *imageUser {
	p.mu.Lock()
	defer p.mu.Unlock()
	user, ok := p.users[imageRef]
	if !ok {
		return nil
	}
	return &user
}

// applyDefaultImageTag adds ":latest" to an image reference with neither a
// tag nor a digest. It does not add the default registry: naming images is
// the runtime's business.
func applyDefaultImageTag(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("couldn't parse image name %q: %w", image, err)
	}
	_, tagged := named.(reference.Tagged)
	_, digested := named.(reference.Digested)
	if !tagged && !digested {
		return image + ":latest", nil
	}
	return image, nil
}

// pullPolicy is the container's pull policy, defaulted as the API server
// does when it is empty: Always for the tag "latest" (which a reference
// with neither tag nor digest has), else IfNotPresent.
func pullPolicy(policy corev1.PullPolicy, image string) corev1.PullPolicy {
	if policy != "" {
		return policy
	}
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return corev1.PullIfNotPresent
	}
	tagged, hasTag := named.(reference.Tagged)
	_, hasDigest := named.(reference.Digested)
	if (hasTag && tagged.Tag() == "latest") || (!hasTag && !hasDigest) {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// pullFailure is the waiting reason and message of a failed pull: the
// kubelet's named causes when the runtime's message starts with one, else
// ErrImagePull with the runtime's error.
func pullFailure(image string, err error) (reason, message string) {
	runtimeMessage := grpcMessage(err)
	for _, known := range []struct {
		reason string
		cause  string
	}{
		{crierrors.ErrRegistryUnavailable.Error(), "the registry is unavailable"},
		{crierrors.ErrSignatureValidationFailed.Error(), "the signature validation failed"},
	} {
		if rest, ok := strings.CutPrefix(runtimeMessage, known.reason); ok {
			return known.reason, fmt.Sprintf("image pull failed for %s because %s%s", image, known.cause, rest)
		}
	}
	return kubecontainer.ReasonErrImagePull, err.Error()
}
