package network

import (
	"fmt"
	"math"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// The traffic-shaping annotations, as the kubelet has always read them.
const (
	AnnotationIngressBandwidth = "kubernetes.io/ingress-bandwidth"
	AnnotationEgressBandwidth  = "kubernetes.io/egress-bandwidth"
)

// Bandwidth limits outside these bounds are refused, as the kubelet
// refused them.
var (
	minBandwidth = resource.MustParse("1k")
	maxBandwidth = resource.MustParse("1P")
)

// The CNI_ARGS keys that name a pod, the kubelet's.
const (
	argPodNamespace = "K8S_POD_NAMESPACE"
	argPodName      = "K8S_POD_NAME"
	argPodUID       = "K8S_POD_UID"
	argInfraID      = "K8S_POD_INFRA_CONTAINER_ID"
)

// PortMapping is one entry of the portMappings capability, as the portmap
// plugin reads it.
type PortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// Bandwidth is the bandwidth capability, as the bandwidth plugin reads it:
// rates in bits per second, bursts in bits.
type Bandwidth struct {
	IngressRate  int64 `json:"ingressRate,omitempty"`
	IngressBurst int64 `json:"ingressBurst,omitempty"`
	EgressRate   int64 `json:"egressRate,omitempty"`
	EgressBurst  int64 `json:"egressBurst,omitempty"`
}

// IPRange is one range of the ipRanges capability.
type IPRange struct {
	Subnet string `json:"subnet"`
}

// PodCapabilities are the per-pod values nodelet hands the network
// configuration through libcni's capability arguments: host ports
// (portMappings), the traffic-shaping annotations (bandwidth) and the
// node's pod subnets (ipRanges, one range set per family). A plugin gets
// only the capabilities its configuration declares. pod may be nil for a
// sandbox of no known pod; an annotation that is not a reasonable
// bandwidth is an error, as it was under the kubelet.
func PodCapabilities(pod *corev1.Pod, podCIDRs []string) (map[string]any, error) {
	caps := map[string]any{}
	if pod != nil {
		if mappings := podPortMappings(pod); len(mappings) > 0 {
			caps["portMappings"] = mappings
		}
		bandwidth, err := podBandwidth(pod.Annotations)
		if err != nil {
			return nil, err
		}
		if bandwidth != nil {
			caps["bandwidth"] = *bandwidth
		}
	}
	var ranges [][]IPRange
	for _, cidr := range podCIDRs {
		_, subnet, err := net.ParseCIDR(cidr)
		if err != nil {
			return nil, fmt.Errorf("pod CIDR %q: %w", cidr, err)
		}
		ranges = append(ranges, []IPRange{{Subnet: subnet.String()}})
	}
	if len(ranges) > 0 {
		caps["ipRanges"] = ranges
	}
	return caps, nil
}

// podPortMappings are the pod's host ports (podutil.HostPorts) as the
// portmap plugin reads them, protocols in lowercase.
func podPortMappings(pod *corev1.Pod) []PortMapping {
	var mappings []PortMapping
	for _, port := range podutil.HostPorts(pod) {
		mappings = append(mappings, PortMapping{
			HostPort:      port.HostPort,
			ContainerPort: port.ContainerPort,
			Protocol:      strings.ToLower(string(port.Protocol)),
			HostIP:        port.HostIP,
		})
	}
	return mappings
}

// podBandwidth reads the traffic-shaping annotations; nil when there are
// none. The burst is left practically unlimited, as the kubelet left it.
func podBandwidth(annotations map[string]string) (*Bandwidth, error) {
	ingress, err := bandwidthAnnotation(annotations, AnnotationIngressBandwidth)
	if err != nil {
		return nil, err
	}
	egress, err := bandwidthAnnotation(annotations, AnnotationEgressBandwidth)
	if err != nil {
		return nil, err
	}
	if ingress == 0 && egress == 0 {
		return nil, nil
	}
	bandwidth := &Bandwidth{}
	if ingress > 0 {
		bandwidth.IngressRate, bandwidth.IngressBurst = ingress, math.MaxInt32
	}
	if egress > 0 {
		bandwidth.EgressRate, bandwidth.EgressBurst = egress, math.MaxInt32
	}
	return bandwidth, nil
}

func bandwidthAnnotation(annotations map[string]string, key string) (int64, error) {
	value, ok := annotations[key]
	if !ok {
		return 0, nil
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return 0, fmt.Errorf("annotation %s: %q is not a quantity: %w", key, value, err)
	}
	if q.Cmp(minBandwidth) < 0 {
		return 0, fmt.Errorf("annotation %s: %s is unreasonably small (< %s)", key, value, minBandwidth.String())
	}
	if q.Cmp(maxBandwidth) > 0 {
		return 0, fmt.Errorf("annotation %s: %s is unreasonably large (> %s)", key, value, maxBandwidth.String())
	}
	return q.Value(), nil
}

// podArgs are the CNI_ARGS nodelet passes the network configuration, the
// kubelet's: IgnoreUnknown first, so that plugins that know none of the
// others still run, then the pod's identity. The identity is the Pod's
// when nodelet knows it, else what the runtime passed.
func podArgs(runtimeArgs, containerID string, pod *corev1.Pod) [][2]string {
	given := parseArgs(runtimeArgs)
	namespace, name, uid := given[argPodNamespace], given[argPodName], given[argPodUID]
	if pod != nil {
		namespace, name, uid = pod.Namespace, pod.Name, string(pod.UID)
	}
	args := [][2]string{{"IgnoreUnknown", "1"}}
	if namespace != "" || name != "" {
		args = append(args, [2]string{argPodNamespace, namespace}, [2]string{argPodName, name})
	}
	args = append(args, [2]string{argInfraID, containerID})
	if uid != "" {
		args = append(args, [2]string{argPodUID, uid})
	}
	return args
}

// parseArgs reads CNI_ARGS: KEY=VALUE pairs separated by semicolons.
func parseArgs(s string) map[string]string {
	args := map[string]string{}
	for _, pair := range strings.Split(s, ";") {
		key, value, ok := strings.Cut(pair, "=")
		if ok && key != "" {
			args[key] = value
		}
	}
	return args
}

// argValue finds key in CNI_ARGS given as pairs.
func argValue(args [][2]string, key string) string {
	for _, kv := range args {
		if kv[0] == key {
			return kv[1]
		}
	}
	return ""
}
