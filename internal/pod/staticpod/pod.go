package staticpod

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// maxConfigLength is the largest manifest read, the kubelet's.
const maxConfigLength = 10 << 20

// Source names where a set of static pods comes from: the kind of source
// ("file" or "http") and the file path or URL, which the pods' UIDs hash.
type Source struct {
	Kind string
	Name string
}

// Decode reads one Pod, or with list the Pods of a PodList too, from YAML
// or JSON, and prepares each for nodeName (Prepare). A document that is
// neither, or a pod that is not valid, is an error naming it.
func Decode(data []byte, source Source, nodeName string, list bool) ([]*corev1.Pod, error) {
	if len(data) > maxConfigLength {
		return nil, fmt.Errorf("%s: larger than %d bytes", source.Name, maxConfigLength)
	}
	jsonData, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source.Name, err)
	}
	var meta metav1.TypeMeta
	if err := json.Unmarshal(jsonData, &meta); err != nil {
		return nil, fmt.Errorf("%s: %w", source.Name, err)
	}
	if meta.APIVersion != "v1" {
		return nil, fmt.Errorf("%s: apiVersion %q, want v1", source.Name, meta.APIVersion)
	}
	var pods []*corev1.Pod
	switch {
	case meta.Kind == "Pod":
		pod := &corev1.Pod{}
		if err := json.Unmarshal(jsonData, pod); err != nil {
			return nil, fmt.Errorf("%s: invalid pod: %w", source.Name, err)
		}
		pods = append(pods, pod)
	case meta.Kind == "PodList" && list:
		podList := &corev1.PodList{}
		if err := json.Unmarshal(jsonData, podList); err != nil {
			return nil, fmt.Errorf("%s: invalid pod list: %w", source.Name, err)
		}
		for i := range podList.Items {
			pods = append(pods, &podList.Items[i])
		}
	default:
		return nil, fmt.Errorf("%s: kind %q is not a Pod", source.Name, meta.Kind)
	}
	for _, pod := range pods {
		if err := Prepare(pod, source, nodeName); err != nil {
			return nil, fmt.Errorf("%s: %w", source.Name, err)
		}
	}
	return pods, nil
}

// Prepare makes a decoded manifest the pod the node runs, as the kubelet
// does: defaulted as the API server would (static pods never pass through
// it), its UID a hash of the pod, the node and the source, named
// <name>-<node> in its namespace ("default" if none), bound to the node,
// annotated with its hash and source; a pod from a file tolerates every
// NoExecute taint. A pod that is not valid, or that references API
// objects a node may not read for a static pod, is an error.
func Prepare(pod *corev1.Pod, source Source, nodeName string) error {
	if pod.Name == "" {
		return errors.New("invalid pod: name is needed for the pod")
	}
	SetDefaults(pod)
	if pod.UID == "" {
		pod.UID = hashUID(pod, source, nodeName)
	}
	pod.Name = fmt.Sprintf("%s-%s", pod.Name, strings.ToLower(nodeName))
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[podutil.ConfigHashAnnotation] = string(pod.UID)
	pod.Annotations[podutil.ConfigSourceAnnotation] = source.Kind
	if source.Kind == podutil.FileSource {
		addToleration(pod, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if err := Validate(pod); err != nil {
		return fmt.Errorf("invalid pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if resource := apiObjectReference(pod); resource != "" {
		return fmt.Errorf("static pods may not reference %s", resource)
	}
	return nil
}

// hashUID is the pod's UID: an FNV-128a hash of the defaulted manifest,
// and for a file the node and the file's path, for a URL the URL, as the
// kubelet's. An edited manifest is a new pod.
func hashUID(pod *corev1.Pod, source Source, nodeName string) types.UID {
	hasher := fnv.New128a()
	data, _ := json.Marshal(pod) // a decoded Pod always encodes
	hasher.Write(data)
	if source.Kind == podutil.FileSource {
		fmt.Fprintf(hasher, "host:%s", nodeName)
		fmt.Fprintf(hasher, "file:%s", source.Name)
	} else {
		fmt.Fprintf(hasher, "url:%s", source.Name)
	}
	return types.UID(hex.EncodeToString(hasher.Sum(nil)))
}

func addToleration(pod *corev1.Pod, toleration corev1.Toleration) {
	for _, t := range pod.Spec.Tolerations {
		if t.MatchToleration(&toleration) {
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, toleration)
}

// Validate checks what the node relies on and the API server would have
// refused: names, at least one container, unique container and volume
// names, images. It is not the API server's whole validation.
func Validate(pod *corev1.Pod) error {
	var errs []error
	for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
		errs = append(errs, fmt.Errorf("metadata.name: %s", msg))
	}
	for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
		errs = append(errs, fmt.Errorf("metadata.namespace: %s", msg))
	}
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, errors.New("spec.containers: Required value"))
	}
	names := map[string]bool{}
	check := func(path string, c *corev1.Container) {
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, fmt.Errorf("%s.name: %s", path, msg))
		}
		if names[c.Name] {
			errs = append(errs, fmt.Errorf("%s.name: Duplicate value: %q", path, c.Name))
		}
		names[c.Name] = true
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, fmt.Errorf("%s.image: Required value", path))
		}
	}
	for i := range pod.Spec.InitContainers {
		check(fmt.Sprintf("spec.initContainers[%d]", i), &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(fmt.Sprintf("spec.containers[%d]", i), &pod.Spec.Containers[i])
	}
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, errors.New("spec.ephemeralContainers: Forbidden: static pods may not have ephemeral containers"))
	}
	volumes := map[string]bool{}
	for i, v := range pod.Spec.Volumes {
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, fmt.Errorf("spec.volumes[%d].name: %s", i, msg))
		}
		if volumes[v.Name] {
			errs = append(errs, fmt.Errorf("spec.volumes[%d].name: Duplicate value: %q", i, v.Name))
		}
		volumes[v.Name] = true
	}
	return errors.Join(errs...)
}

// apiObjectReference names the kind of API object a pod references that a
// static pod may not (the kubelet's PreventStaticPodAPIReferences, on by
// default): the node could not read it for a pod the API server does not
// know, and NodeRestriction refuses such a mirror pod. "" when none.
func apiObjectReference(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return "serviceaccounts"
	}
	if len(pod.Spec.ImagePullSecrets) > 0 {
		return "secrets"
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return "resourceclaims"
	}
	for _, c := range allContainers(pod) {
		for _, from := range c.EnvFrom {
			switch {
			case from.SecretRef != nil:
				return "secrets"
			case from.ConfigMapRef != nil:
				return "configmaps"
			}
		}
		for _, env := range c.Env {
			if env.ValueFrom == nil {
				continue
			}
			switch {
			case env.ValueFrom.SecretKeyRef != nil:
				return "secrets"
			case env.ValueFrom.ConfigMapKeyRef != nil:
				return "configmaps"
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			return "configmaps (via configmap volumes)"
		case v.Secret != nil:
			return "secrets (via secret volumes)"
		case v.CSI != nil:
			return "csidrivers (via CSI volumes)"
		case v.PersistentVolumeClaim != nil:
			return "persistentvolumeclaims"
		case v.Ephemeral != nil:
			return "persistentvolumeclaims (via ephemeral volumes)"
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					return "configmaps (via projected volumes)"
				case s.Secret != nil:
					return "secrets (via projected volumes)"
				case s.ServiceAccountToken != nil:
					return "serviceaccounts (via projected volumes)"
				case s.ClusterTrustBundle != nil:
					return "clustertrustbundles"
				case s.PodCertificate != nil:
					return "podcertificates"
				}
			}
		}
	}
	return ""
}

func allContainers(pod *corev1.Pod) []*corev1.Container {
	var all []*corev1.Container
	for i := range pod.Spec.InitContainers {
		all = append(all, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		all = append(all, &pod.Spec.Containers[i])
	}
	return all
}
