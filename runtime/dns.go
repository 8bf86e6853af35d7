package runtime

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The API server's limits on a pod's resolver configuration; a merge with
// the host's may exceed them, and is then cut back as the kubelet does.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	// Longer search domains make some resolvers (glibc 2.28) abort.
	maxDNSSearchDomainLength = 253
	// A resolv.conf larger than this is not a resolver configuration.
	maxResolvConfLength = 10 << 20
)

// resolvConf is what a pod can inherit from a resolv.conf file.
type resolvConf struct {
	Nameservers []string
	Searches    []string
	Options     []string
	// LocalOnly is set when the node gives pods no resolver configuration
	// of its own (an empty --resolv-conf): pods that would inherit the
	// host's get the local machine's resolver and search nothing, and the
	// others add no host domains to theirs.
	LocalOnly bool
}

// localResolvConf is what pods inherit from a node that gives them no
// resolver configuration: the local machine's resolver, as the resolver
// library itself falls back to when no nameserver is set, on the loopback
// of the node IP's family; "." searches nothing.
func localResolvConf(nodeIP string) resolvConf {
	server := "127.0.0.1"
	if ip := net.ParseIP(nodeIP); ip != nil && ip.To4() == nil {
		server = "::1"
	}
	return resolvConf{Nameservers: []string{server}, Searches: []string{"."}, LocalOnly: true}
}

// parseResolvConf reads the lines of a resolv.conf that matter to a pod:
// nameserver lines add up, the last search line wins, options lines merge
// by option name, later values winning.
func parseResolvConf(content string) (resolvConf, error) {
	var conf resolvConf
	var errs []error
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) < 2 {
				errs = append(errs, errors.New("nameserver line without an address"))
				continue
			}
			conf.Nameservers = append(conf.Nameservers, fields[1])
		case "search":
			// The same domain with and without its trailing dot counts once,
			// so that it does not use up the search limits twice.
			conf.Searches = nil
			for _, domain := range fields[1:] {
				if domain != "." {
					conf.Searches = append(conf.Searches, strings.TrimSuffix(domain, "."))
				}
			}
		case "options":
			conf.Options = mergeDNSOptions(conf.Options, fields[1:])
		}
	}
	return conf, errors.Join(errs...)
}

// mergeDNSOptions adds options ("name" or "name:value") to a list; an option
// already there keeps its place and takes the new value.
func mergeDNSOptions(options []string, added []string) []string {
	name := func(option string) string {
		n, _, _ := strings.Cut(option, ":")
		return n
	}
	merged := append([]string(nil), options...)
	index := map[string]int{}
	for i, option := range merged {
		index[name(option)] = i
	}
	for _, option := range added {
		if i, ok := index[name(option)]; ok {
			merged[i] = option
			continue
		}
		index[name(option)] = len(merged)
		merged = append(merged, option)
	}
	return merged
}

// defaultDNSOptions are the options of a pod that resolves through the
// cluster's DNS: names with fewer than five dots are tried with the search
// domains first, so that "db" and "db.other" find Services.
var defaultDNSOptions = []string{"ndots:5"}

// ClusterDNS is the cluster's DNS service as pods see it.
type ClusterDNS struct {
	// Servers are the addresses of the cluster's DNS service; without
	// them ClusterFirst pods resolve like Default ones.
	Servers []string
	// Domain is the cluster's DNS domain (cluster.local); pods search
	// <namespace>.svc.<domain>, svc.<domain> and <domain> first.
	Domain string
}

// dnsEvent is a warning about a pod's resolver configuration, for an Event
// on the pod.
type dnsEvent struct {
	Reason  string
	Message string
}

// The reasons of dnsEvent, the kubelet's.
const (
	reasonMissingClusterDNS = "MissingClusterDNS"
	reasonDNSConfigForming  = "DNSConfigForming"
)

// missingClusterDNSMessage is said on the pod and on the Node when a pod
// asks for the cluster's DNS and there is none.
var missingClusterDNSMessage = fmt.Sprintf("nodelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", corev1.DNSClusterFirst, corev1.DNSDefault)

// podDNSType is where a pod's resolver configuration starts from.
type podDNSType int

const (
	podDNSCluster podDNSType = iota
	podDNSHost
	podDNSNone
)

// dnsType maps a pod's DNS policy to where its resolvers come from. A
// ClusterFirst pod on the host's network resolves as the host does; it
// must ask for ClusterFirstWithHostNet to get the cluster's DNS.
func dnsType(pod *corev1.Pod) (podDNSType, error) {
	switch pod.Spec.DNSPolicy {
	case corev1.DNSNone:
		return podDNSNone, nil
	case corev1.DNSClusterFirstWithHostNet:
		return podDNSCluster, nil
	case corev1.DNSClusterFirst, "":
		if pod.Spec.HostNetwork {
			return podDNSHost, nil
		}
		return podDNSCluster, nil
	case corev1.DNSDefault:
		return podDNSHost, nil
	}
	return 0, fmt.Errorf("unknown DNS policy %q", pod.Spec.DNSPolicy)
}

// podDNSConfig applies a pod's DNS policy and its own dnsConfig to the
// host's resolver configuration and the cluster's DNS, as the kubelet
// composes them. The events tell what had to be left out to stay within
// the limits, and when the cluster's DNS was asked for but is not known.
func podDNSConfig(pod *corev1.Pod, host resolvConf, cluster ClusterDNS) (*runtimeapi.DNSConfig, []dnsEvent, error) {
	kind, err := dnsType(pod)
	if err != nil {
		return nil, nil, err
	}
	var events []dnsEvent
	config := &runtimeapi.DNSConfig{}
	switch {
	case kind == podDNSNone:
		// Only the pod's own dnsConfig.
	case kind == podDNSCluster && len(cluster.Servers) > 0:
		// The cluster's DNS is the only server: it forwards what it does
		// not know to the host's resolvers itself.
		config.Servers = append(config.Servers, cluster.Servers...)
		var hostSearches []string
		if !host.LocalOnly {
			hostSearches = host.Searches
		}
		config.Searches = clusterSearches(pod.Namespace, cluster.Domain, hostSearches)
		config.Options = append(config.Options, defaultDNSOptions...)
	default:
		if kind == podDNSCluster {
			events = append(events, dnsEvent{Reason: reasonMissingClusterDNS, Message: missingClusterDNSMessage})
		}
		config.Servers = append(config.Servers, host.Nameservers...)
		config.Searches = append(config.Searches, host.Searches...)
		config.Options = append(config.Options, host.Options...)
	}

	if own := pod.Spec.DNSConfig; own != nil {
		config.Servers = withoutDuplicates(append(config.Servers, own.Nameservers...))
		config.Searches = withoutDuplicates(append(config.Searches, own.Searches...))
		var options []string
		for _, option := range own.Options {
			if option.Value != nil && *option.Value != "" {
				options = append(options, option.Name+":"+*option.Value)
			} else {
				options = append(options, option.Name)
			}
		}
		config.Options = mergeDNSOptions(config.Options, options)
	}

	var cut bool
	if config.Servers, cut = limitNameservers(config.Servers); cut {
		events = append(events, dnsEvent{Reason: reasonDNSConfigForming, Message: fmt.Sprintf("Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s", strings.Join(config.Servers, " "))})
	}
	if config.Searches, cut = limitSearches(config.Searches); cut {
		events = append(events, dnsEvent{Reason: reasonDNSConfigForming, Message: fmt.Sprintf("Search Line limits were exceeded, some search paths have been omitted, the applied search line is: %s", strings.Join(config.Searches, " "))})
	}
	return config, events, nil
}

// clusterSearches are the search domains of a pod that resolves through
// the cluster's DNS: its namespace's Services, all Services, the cluster,
// then the host's.
func clusterSearches(namespace, domain string, hostSearches []string) []string {
	if domain == "" {
		return append([]string(nil), hostSearches...)
	}
	searches := []string{namespace + ".svc." + domain, "svc." + domain, domain}
	return withoutDuplicates(append(searches, hostSearches...))
}

func limitNameservers(servers []string) ([]string, bool) {
	if len(servers) <= maxDNSNameservers {
		return servers, false
	}
	return servers[:maxDNSNameservers], true
}

// limitSearches keeps the first search domains that fit the limits on
// their count, each one's length and the length of the search line.
func limitSearches(searches []string) ([]string, bool) {
	cut := false
	if len(searches) > maxDNSSearchPaths {
		searches, cut = searches[:maxDNSSearchPaths], true
	}
	kept := make([]string, 0, len(searches))
	for _, domain := range searches {
		if len(domain) > maxDNSSearchDomainLength {
			cut = true
			continue
		}
		kept = append(kept, domain)
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > maxDNSSearchListChars {
		kept, cut = kept[:len(kept)-1], true
	}
	if len(kept) == 0 {
		kept = nil
	}
	return kept, cut
}

func withoutDuplicates(values []string) []string {
	seen := make(map[string]bool, len(values))
	var unique []string
	for _, v := range values {
		if !seen[v] {
			seen[v] = true
			unique = append(unique, v)
		}
	}
	return unique
}

// dnsConfig reads the host's resolver configuration when the pod's policy
// uses it and returns the pod's. What had to be cut or fell back is told
// as the kubelet does, with DNSConfigForming and MissingClusterDNS events
// (the latter on the Node too).
func (m *Manager) dnsConfig(pod *corev1.Pod) (*runtimeapi.DNSConfig, error) {
	var host resolvConf
	switch {
	case pod.Spec.DNSPolicy == corev1.DNSNone:
	case m.config.ResolvConf == "":
		host = localResolvConf(m.config.NodeIP)
	default:
		var err error
		if host, err = readResolvConf(m.config.ResolvConf); err != nil {
			return nil, err
		}
	}
	config, events, err := podDNSConfig(pod, host, m.config.ClusterDNS)
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		if e.Reason == reasonMissingClusterDNS {
			m.recorder.Eventf(pod, corev1.EventTypeWarning, e.Reason, "pod: %q. %s", podDescription(pod), e.Message)
			if m.config.NodeName != "" {
				m.recorder.Event(m.nodeRef(), corev1.EventTypeWarning, e.Reason, e.Message)
			}
			continue
		}
		m.recorder.Event(pod, corev1.EventTypeWarning, e.Reason, e.Message)
	}
	return config, nil
}

func readResolvConf(path string) (resolvConf, error) {
	f, err := os.Open(path)
	if err != nil {
		return resolvConf{}, fmt.Errorf("reading the host's resolver configuration: %w", err)
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, maxResolvConfLength+1))
	if err != nil {
		return resolvConf{}, fmt.Errorf("reading the host's resolver configuration %s: %w", path, err)
	}
	if len(content) > maxResolvConfLength {
		return resolvConf{}, fmt.Errorf("the host's resolver configuration %s is larger than %d bytes", path, maxResolvConfLength)
	}
	conf, err := parseResolvConf(string(content))
	if err != nil {
		return resolvConf{}, fmt.Errorf("parsing the host's resolver configuration %s: %w", path, err)
	}
	return conf, nil
}

// reasonCheckLimitsForResolvConf is the kubelet's reason for the Node event
// about a host resolver configuration pods cannot inherit whole.
const reasonCheckLimitsForResolvConf = "CheckLimitsForResolvConf"

// resolvConfLimitProblem says why a host search line cannot be inherited
// whole by pods, as the kubelet checks it once at start: too many domains
// (three fewer when the cluster's domains come first), one too long, or
// the line too long. Empty when it fits.
func resolvConfLimitProblem(path string, searches []string, clusterDomain string) string {
	domainLimit := maxDNSSearchPaths
	if clusterDomain != "" {
		domainLimit -= 3
	}
	if len(searches) > domainLimit {
		return fmt.Sprintf("Resolv.conf file '%s' contains search line consisting of more than %d domains!", path, domainLimit)
	}
	for _, domain := range searches {
		if len(domain) > maxDNSSearchDomainLength {
			return fmt.Sprintf("Resolv.conf file %q contains a search path which length is more than allowed %d chars!", path, maxDNSSearchDomainLength)
		}
	}
	if len(strings.Join(searches, " ")) > maxDNSSearchListChars {
		return fmt.Sprintf("Resolv.conf file '%s' contains search line which length is more than allowed %d chars!", path, maxDNSSearchListChars)
	}
	return ""
}

// CheckResolvConfLimits warns on the Node, once at start as the kubelet
// does, when the host's resolver configuration cannot be read or pods
// cannot inherit its search line whole: each pod would otherwise have it
// cut with a DNSConfigForming event, and nobody would see why on the node.
func (m *Manager) CheckResolvConfLimits() {
	if m.config.ResolvConf == "" || m.config.NodeName == "" {
		return
	}
	var problem string
	if conf, err := readResolvConf(m.config.ResolvConf); err != nil {
		problem = err.Error()
	} else {
		problem = resolvConfLimitProblem(m.config.ResolvConf, conf.Searches, m.config.ClusterDNS.Domain)
	}
	if problem != "" {
		m.log.Info("Host resolver configuration is beyond what pods can inherit", "path", m.config.ResolvConf, "problem", problem)
		m.recorder.Event(m.nodeRef(), corev1.EventTypeWarning, reasonCheckLimitsForResolvConf, problem)
	}
}

// nodeRef points an event at the Node, as the kubelet's node events do:
// its UID is its name, so the event finds the Node whatever object it is
// now (package node's Ref, which the runtime, below node, does not import).
func (m *Manager) nodeRef() *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: m.config.NodeName, UID: types.UID(m.config.NodeName)}
}
