package main

// `nodelet-approver remove-companions`: the chart's post-delete hook. A
// companion Node outlives its release (nodelet cannot tell an uninstall
// from a restart of its pod), and nothing else deletes it; nor its
// host folders, which a pod on each host removes (remove_hosts.go).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodelet/nodelet/internal/node"
)

// removeCommand is the sub command's name.
const removeCommand = "remove-companions"

// removePollPeriod is how often the DaemonSet's pods are listed while
// they go.
const removePollPeriod = 2 * time.Second

type removeOptions struct {
	kubeconfig string
	// namespace and podSelector find the DaemonSet's pods; nodeSelector
	// the release's companion Nodes.
	namespace, podSelector, nodeSelector string
	timeout                              time.Duration
	// cleanPod, when set, is run on each host (--clean-host-pod); hosts
	// are known from the pods seen and from the companion Nodes' names,
	// which are their host's with nodeNameSuffix.
	cleanPod       *corev1.Pod
	nodeNameSuffix string
	cleanTimeout   time.Duration
}

func mainRemove(args []string, goFlags *flag.FlagSet, zapOpts *zap.Options) {
	opts, err := parseRemoveOptions(args, goFlags)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodelet-approver %s: %v\n", removeCommand, err)
		os.Exit(2)
	}
	log := zap.New(zap.UseFlagOptions(zapOpts))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	if err := runRemove(ctrl.SetupSignalHandler(), opts, log.WithName(removeCommand)); err != nil {
		log.Error(err, "Failed to remove the companion Nodes")
		os.Exit(1)
	}
}

func parseRemoveOptions(args []string, goFlags *flag.FlagSet) (removeOptions, error) {
	o := removeOptions{namespace: os.Getenv("POD_NAMESPACE"), timeout: 4 * time.Minute, cleanTimeout: 4 * time.Minute}
	var cleanPod string
	fs := pflag.NewFlagSet("nodelet-approver "+removeCommand, pflag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig of the hook's identity (default: in-cluster, or $KUBECONFIG).")
	fs.StringVar(&o.namespace, "namespace", o.namespace, "Namespace of nodelet's DaemonSet (default: $POD_NAMESPACE).")
	fs.StringVar(&o.podSelector, "pod-selector", "", "Label selector of the DaemonSet's pods, waited for to be gone first: a nodelet still running would register its Node again (required).")
	fs.StringVar(&o.nodeSelector, "node-selector", "", "Label selector of the release's companion Nodes, which are deleted; only Nodes nodelet registered ("+node.LabelAgent+"=nodelet) are ever selected (required).")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "How long to wait for the DaemonSet's pods to be gone; no Node is deleted after it.")
	fs.StringVar(&cleanPod, "clean-host-pod", "", "A pod (YAML or JSON, with a generateName and no nodeName) run on each host the DaemonSet's pods ran on once they are gone, bound to it, to remove what they left there (nodelet-approver "+cleanCommand+"); none: nothing is removed from the hosts.")
	fs.StringVar(&o.nodeNameSuffix, "node-name-suffix", "", "The companion Nodes' names are their host's with this suffix: their hosts are cleaned too.")
	fs.DurationVar(&o.cleanTimeout, "clean-host-timeout", o.cleanTimeout, "How long to wait for the pods of --clean-host-pod to end.")
	fs.AddGoFlagSet(goFlags)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if cleanPod != "" {
		var err error
		if o.cleanPod, err = parseCleanPod(cleanPod); err != nil {
			return o, err
		}
	}
	if o.namespace == "" || o.podSelector == "" {
		return o, errors.New("--namespace (or $POD_NAMESPACE) and --pod-selector are required")
	}
	if _, err := labels.Parse(o.podSelector); err != nil {
		return o, fmt.Errorf("--pod-selector: %w", err)
	}
	if _, err := companionSelector(o.nodeSelector); err != nil {
		return o, err
	}
	return o, nil
}

// companionSelector is the Nodes to delete: those nodeSelector selects
// among the ones nodelet registered. An empty selector is refused: it
// would select every companion of every release. Pure.
func companionSelector(nodeSelector string) (labels.Selector, error) {
	selector, err := labels.Parse(nodeSelector)
	if err != nil {
		return nil, fmt.Errorf("--node-selector: %w", err)
	}
	if selector.Empty() {
		return nil, errors.New("--node-selector is required: an empty one would select every companion Node")
	}
	agent, err := labels.NewRequirement(node.LabelAgent, selection.Equals, []string{"nodelet"})
	if err != nil {
		return nil, err
	}
	return selector.Add(*agent), nil
}

func runRemove(ctx context.Context, o removeOptions, log logr.Logger) error {
	config, err := restConfigFor(o.kubeconfig, "nodelet-approver/"+removeCommand)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	return removeCompanions(ctx, client, o, removePollPeriod, log)
}

// removeCompanions waits for the DaemonSet's pods to be gone, cleans
// their hosts (with a cleanPod), then deletes the companion Nodes. Their
// pods, bound to Nodes that no longer exist, are the controller-manager's
// pod garbage collector's.
func removeCompanions(ctx context.Context, client kubernetes.Interface, o removeOptions, poll time.Duration, log logr.Logger) error {
	nodes, err := companionSelector(o.nodeSelector)
	if err != nil {
		return err
	}
	var podNodes []string
	err = wait.PollUntilContextTimeout(ctx, poll, o.timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: o.podSelector})
		if err != nil {
			log.Error(err, "Failed to list the DaemonSet's pods", "namespace", o.namespace, "selector", o.podSelector)
			return false, nil
		}
		for i := range pods.Items {
			podNodes = append(podNodes, pods.Items[i].Spec.NodeName)
		}
		if n := len(pods.Items); n > 0 {
			log.Info("Waiting for the DaemonSet's pods to be gone", "namespace", o.namespace, "pods", n)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the pods %q in namespace %s to be gone: %w", o.podSelector, o.namespace, err)
	}
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodes.String()})
	if err != nil {
		return fmt.Errorf("listing the companion Nodes %q: %w", nodes, err)
	}
	var errs []error
	if o.cleanPod != nil {
		companions := make([]string, 0, len(list.Items))
		for i := range list.Items {
			companions = append(companions, list.Items[i].Name)
		}
		hosts := hostsOf(podNodes, companions, o.nodeNameSuffix)
		if err := cleanHosts(ctx, client, o.cleanPod, o.namespace, hosts, poll, o.cleanTimeout, log); err != nil {
			errs = append(errs, err)
		}
	}
	for i := range list.Items {
		n := &list.Items[i]
		err := client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(n.UID))})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("deleting Node %s: %w", n.Name, err))
		default:
			log.Info("Deleted companion Node", "node", n.Name)
		}
	}
	log.Info("Removed the companion Nodes", "selector", nodes.String(), "found", len(list.Items))
	return errors.Join(errs...)
}
