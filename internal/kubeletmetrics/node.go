package kubeletmetrics

import (
	"runtime"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// NodeName is always 1, labelled with the node's name: the mixin
	// joins the other series on it to name the node they come from.
	NodeName = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: kubeletSubsystem,
		Name:      "node_name",
		Help:      "The node's name. The count is always 1.",
	}, []string{"node"})
	// BuildInfo is always 1, labelled with the version nodelet reports
	// as the kubelet's, as every Kubernetes component's: the mixin's
	// version panels and alerts on version skew read it.
	BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubernetes_build_info",
		Help: "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
	}, []string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"})
)

func init() {
	metrics.Registry.MustRegister(NodeName, BuildInfo)
}

// SetNodeName records the node's name.
func SetNodeName(name string) {
	NodeName.Reset()
	NodeName.WithLabelValues(name).Set(1)
}

// SetBuildInfo records the build: gitVersion as nodelet reports it
// (v1.36.3+nodelet.v0.1.0.7f8550a), commit as stamped at build time,
// "-dirty" for a modified tree. The build date is not stamped: builds are
// reproducible.
func SetBuildInfo(gitVersion, commit string) {
	major, minor := majorMinor(gitVersion)
	treeState := "clean"
	if strings.HasSuffix(commit, "-dirty") {
		commit, treeState = strings.TrimSuffix(commit, "-dirty"), "dirty"
	}
	BuildInfo.Reset()
	BuildInfo.WithLabelValues(major, minor, gitVersion, commit, treeState, "", runtime.Version(), runtime.Compiler,
		runtime.GOOS+"/"+runtime.GOARCH).Set(1)
}

// majorMinor reads "1" and "36" from v1.36.3+..., as the kubelet's
// version.Info gives them.
func majorMinor(gitVersion string) (string, string) {
	parts := strings.SplitN(strings.TrimPrefix(gitVersion, "v"), ".", 3)
	if len(parts) < 2 {
		return "", ""
	}
	return parts[0], parts[1]
}
