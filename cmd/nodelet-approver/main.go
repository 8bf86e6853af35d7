// nodelet-approver approves the CertificateSigningRequests with which
// nodelet's DaemonSet pods obtain their companion node's client
// certificate and, with --approve-serving-certificates, its serving
// certificate (package approver says which), and leaves every other one
// pending. It is cluster-wide, so it runs leader-elected: one replica
// decides at a time. `nodelet-approver drain-companions` is the chart's
// pre-delete hook (drain.go), `nodelet-approver remove-companions` its
// post-delete hook (remove.go), `nodelet-approver clean-host` the pod that
// one runs on each host (clean.go), `nodelet-approver check-companions`
// its `helm test` (check.go).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	certificatesv1 "k8s.io/api/certificates/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelet/nodelet/internal/node/approver"
	"github.com/nodelet/nodelet/internal/node/nodeidentity"
)

// minExpirationSeconds is the least spec.expirationSeconds the API server
// accepts.
const minExpirationSeconds = 600

type options struct {
	kubeconfig              string
	serviceAccount          string
	daemonSet               string
	nodeNameSuffix          string
	maxExpirationSeconds    int32
	approveServing          bool
	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	metricsBindAddress      string
	healthProbeBindAddress  string
}

func main() {
	zapOpts := zap.Options{TimeEncoder: zapcore.ISO8601TimeEncoder}
	goFlags := flag.NewFlagSet("log", flag.ExitOnError)
	zapOpts.BindFlags(goFlags)
	if len(os.Args) > 1 && os.Args[1] == removeCommand {
		mainRemove(os.Args[2:], goFlags, &zapOpts)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == drainCommand {
		mainDrain(os.Args[2:], goFlags, &zapOpts)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == checkCommand {
		mainCheck(os.Args[2:], goFlags, &zapOpts)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == cleanCommand {
		mainClean(os.Args[2:], goFlags, &zapOpts)
		return
	}
	opts, err := parseOptions(os.Args[1:], goFlags)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodelet-approver: %v\n", err)
		os.Exit(2)
	}
	log := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	if err := run(opts); err != nil {
		log.Error(err, "nodelet-approver stopped")
		os.Exit(1)
	}
}

func parseOptions(args []string, goFlags *flag.FlagSet) (options, error) {
	o := options{
		nodeNameSuffix:          "-nodelet",
		maxExpirationSeconds:    nodeidentity.CertificateLifetimeSeconds,
		leaderElect:             true,
		leaderElectionNamespace: os.Getenv("POD_NAMESPACE"),
		leaderElectionID:        "nodelet-approver",
		metricsBindAddress:      "0",
		healthProbeBindAddress:  ":8081",
	}
	fs := pflag.NewFlagSet("nodelet-approver", pflag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig of the approver's identity (default: in-cluster, or $KUBECONFIG).")
	fs.StringVar(&o.serviceAccount, "service-account", "", "NAMESPACE:NAME of nodelet's DaemonSet ServiceAccount, the only requester whose CSRs are approved (required).")
	fs.StringVar(&o.daemonSet, "daemonset", "", "NAMESPACE/NAME of nodelet's DaemonSet, in the ServiceAccount's namespace: only a token bound to a pod it controls, on the node whose companion is asked for, is trusted (required).")
	fs.Int32Var(&o.maxExpirationSeconds, "max-expiration-seconds", o.maxExpirationSeconds, "The longest certificate lifetime approved: a CSR must set spec.expirationSeconds to at most this (nodelet asks for its default).")
	fs.BoolVar(&o.approveServing, "approve-serving-certificates", o.approveServing, "Also approve the serving certificate requests (signer kubernetes.io/kubelet-serving) of the companion nodes themselves (system:node:<name><suffix>), for their own names and addresses only.")
	fs.StringVar(&o.nodeNameSuffix, "node-name-suffix", o.nodeNameSuffix, "Appended to the requester's node's name to make the only node name its certificate may carry (nodelet's companion node).")
	fs.BoolVar(&o.leaderElect, "leader-elect", o.leaderElect, "Decide only while holding the leader election lease, so replicas never race.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", o.leaderElectionNamespace, "Namespace of the lease (default: $POD_NAMESPACE).")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", o.leaderElectionID, "Name of the lease.")
	fs.StringVar(&o.metricsBindAddress, "metrics-bind-address", o.metricsBindAddress, "Address of the metrics endpoint; 0 turns it off.")
	fs.StringVar(&o.healthProbeBindAddress, "health-probe-bind-address", o.healthProbeBindAddress, "Address of /healthz and /readyz; 0 turns them off.")
	fs.AddGoFlagSet(goFlags)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	namespace, name, ok := strings.Cut(o.serviceAccount, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return o, fmt.Errorf("--service-account %q: want NAMESPACE:NAME", o.serviceAccount)
	}
	dsNamespace, dsName, ok := strings.Cut(o.daemonSet, "/")
	if !ok || dsNamespace == "" || dsName == "" || strings.Contains(dsName, "/") {
		return o, fmt.Errorf("--daemonset %q: want NAMESPACE/NAME", o.daemonSet)
	}
	if dsNamespace != namespace {
		// A pod runs as a ServiceAccount of its own namespace.
		return o, fmt.Errorf("--daemonset %q is not in the namespace of --service-account %q", o.daemonSet, o.serviceAccount)
	}
	if o.maxExpirationSeconds < minExpirationSeconds {
		return o, fmt.Errorf("--max-expiration-seconds %d: the API server refuses a CSR asking for less than %d", o.maxExpirationSeconds, minExpirationSeconds)
	}
	if o.nodeNameSuffix == "" {
		// The node's own name belongs to its kubelet.
		return o, errors.New("--node-name-suffix must not be empty: the node's own identity belongs to its kubelet")
	}
	if o.leaderElect && o.leaderElectionNamespace == "" {
		return o, errors.New("--leader-election-namespace (or $POD_NAMESPACE) is required with --leader-elect")
	}
	return o, nil
}

// restConfigFor is the API client configuration of a kubeconfig file, or
// of the pod's ServiceAccount (or $KUBECONFIG) without one, with the
// command's user agent.
func restConfigFor(kubeconfig, userAgent string) (*rest.Config, error) {
	var config *rest.Config
	var err error
	if kubeconfig != "" {
		config, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		config, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("loading the API client configuration: %w", err)
	}
	config.UserAgent = userAgent
	return config, nil
}

func run(opts options) error {
	restConfig, err := restConfigFor(opts.kubeconfig, "nodelet-approver")
	if err != nil {
		return err
	}
	scheme := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	leaseDuration, renewDeadline := 30*time.Second, 20*time.Second
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme: scheme,
		// Only CSRs are read from the cache; the approval is written.
		Cache:                         cache.Options{ByObject: map[client.Object]cache.ByObject{&certificatesv1.CertificateSigningRequest{}: {}}},
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              opts.leaderElectionID,
		LeaderElectionNamespace:       opts.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		Metrics:                       metricsserver.Options{BindAddress: opts.metricsBindAddress},
		HealthProbeBindAddress:        opts.healthProbeBindAddress,
	})
	if err != nil {
		return fmt.Errorf("building the manager: %w", err)
	}
	namespace, name, _ := strings.Cut(opts.serviceAccount, ":")
	dsNamespace, dsName, _ := strings.Cut(opts.daemonSet, "/")
	reconciler := &approver.Reconciler{
		Client: mgr.GetClient(),
		// Pods are read one at a time, uncached: the approver may only get
		// them.
		APIReader: mgr.GetAPIReader(),
		Policy: approver.Policy{
			Requester:            "system:serviceaccount:" + namespace + ":" + name,
			NodeNameSuffix:       opts.nodeNameSuffix,
			DaemonSetNamespace:   dsNamespace,
			DaemonSetName:        dsName,
			MaxExpirationSeconds: opts.maxExpirationSeconds,
		},
		Log: ctrl.Log.WithName("approver"),
	}
	if opts.approveServing {
		reconciler.Serving = &approver.ServingPolicy{
			NodeNameSuffix:       opts.nodeNameSuffix,
			MaxExpirationSeconds: opts.maxExpirationSeconds,
		}
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the approver: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("Starting nodelet-approver", "requester", reconciler.Policy.Requester, "daemonSet", opts.daemonSet,
		"nodeNameSuffix", opts.nodeNameSuffix, "maxExpirationSeconds", opts.maxExpirationSeconds, "signer", approver.SignerName, "servingCertificates", opts.approveServing)
	return mgr.Start(ctrl.SetupSignalHandler())
}
