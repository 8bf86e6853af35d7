package staticpod

import (
	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// SetDefaults fills what the API server's defaulting of a v1 Pod fills,
// for the fields nodelet reads: a static pod never passes through the
// API server, and the code that runs pods takes these as set.
func SetDefaults(pod *corev1.Pod) {
	spec := &pod.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	for i := range spec.InitContainers {
		setContainerDefaults(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		setContainerDefaults(&spec.Containers[i], spec.HostNetwork)
	}
	for i := range spec.Volumes {
		setVolumeDefaults(&spec.Volumes[i])
	}
}

func setContainerDefaults(c *corev1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		port := &c.Ports[i]
		if port.Protocol == "" {
			port.Protocol = corev1.ProtocolTCP
		}
		if hostNetwork && port.HostPort == 0 {
			port.HostPort = port.ContainerPort
		}
	}
	// Requests default to the limits, which decides the pod's QoS class.
	for name, limit := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[name] = limit.DeepCopy()
		}
	}
	for i := range c.Env {
		if ref := c.Env[i].ValueFrom; ref != nil && ref.FieldRef != nil && ref.FieldRef.APIVersion == "" {
			ref.FieldRef.APIVersion = "v1"
		}
	}
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setProbeDefaults(probe)
	}
	if c.Lifecycle != nil {
		for _, handler := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if handler != nil {
				setHTTPGetDefaults(handler.HTTPGet)
			}
		}
	}
}

// defaultPullPolicy is Always for an image tagged latest or not at all,
// else IfNotPresent: the API server's rule.
func defaultPullPolicy(image string) corev1.PullPolicy {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return corev1.PullIfNotPresent
	}
	if _, digested := named.(reference.Digested); digested {
		if _, tagged := named.(reference.Tagged); !tagged {
			return corev1.PullIfNotPresent
		}
	}
	tag := "latest"
	if tagged, ok := named.(reference.Tagged); ok {
		tag = tagged.Tag()
	}
	if tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func setProbeDefaults(probe *corev1.Probe) {
	if probe == nil {
		return
	}
	if probe.TimeoutSeconds == 0 {
		probe.TimeoutSeconds = 1
	}
	if probe.PeriodSeconds == 0 {
		probe.PeriodSeconds = 10
	}
	if probe.SuccessThreshold == 0 {
		probe.SuccessThreshold = 1
	}
	if probe.FailureThreshold == 0 {
		probe.FailureThreshold = 3
	}
	setHTTPGetDefaults(probe.HTTPGet)
	if probe.GRPC != nil && probe.GRPC.Service == nil {
		probe.GRPC.Service = ptr.To("")
	}
}

func setHTTPGetDefaults(get *corev1.HTTPGetAction) {
	if get == nil {
		return
	}
	if get.Path == "" {
		get.Path = "/"
	}
	if get.Scheme == "" {
		get.Scheme = corev1.URISchemeHTTP
	}
}

func setVolumeDefaults(v *corev1.Volume) {
	switch {
	case v.HostPath != nil:
		if v.HostPath.Type == nil {
			v.HostPath.Type = ptr.To(corev1.HostPathUnset)
		}
	case v.DownwardAPI != nil:
		if v.DownwardAPI.DefaultMode == nil {
			v.DownwardAPI.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range v.DownwardAPI.Items {
			if ref := v.DownwardAPI.Items[i].FieldRef; ref != nil && ref.APIVersion == "" {
				ref.APIVersion = "v1"
			}
		}
	case v.VolumeSource == corev1.VolumeSource{}:
		// A volume of no kind is an emptyDir, as the API server defaults it.
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
}
