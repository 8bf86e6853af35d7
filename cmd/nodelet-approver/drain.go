package main

// `nodelet-approver drain-companions`: the chart's pre-delete hook. Before
// helm deletes the DaemonSets, while nodelet still runs, it does what
// `kubectl drain --ignore-daemonsets --delete-emptydir-data --force` does
// to each of the release's companion Nodes: cordons it, evicts its pods
// through the Eviction API (so PodDisruptionBudgets hold), and waits for
// them to be gone. nodelet then stops them as it stops any deleted pod:
// preStop hooks, their grace period, CNI DEL. Without it they would die
// with the runtime's pod, abruptly, and their controllers learn it late.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// drainCommand is the sub command's name.
const drainCommand = "drain-companions"

// drainPollPeriod is how often the companions' pods are listed, and an
// eviction refused with 429 (a disruption budget) asked again; kubectl
// drain asks again every 5 s.
const drainPollPeriod = 2 * time.Second

type drainOptions struct {
	kubeconfig string
	// nodeSelector is the release's companion Nodes (companionSelector).
	nodeSelector string
	// timeout bounds the whole drain: a pod not gone by then fails it.
	timeout time.Duration
}

func mainDrain(args []string, goFlags *flag.FlagSet, zapOpts *zap.Options) {
	opts, err := parseDrainOptions(args, goFlags)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodelet-approver %s: %v\n", drainCommand, err)
		os.Exit(2)
	}
	log := zap.New(zap.UseFlagOptions(zapOpts))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	if err := runDrain(ctrl.SetupSignalHandler(), opts, log.WithName(drainCommand)); err != nil {
		log.Error(err, "Failed to drain the companion Nodes")
		// The Job's pod's termination message, which helm's error shows.
		_ = os.WriteFile("/dev/termination-log", []byte(err.Error()), 0o644)
		os.Exit(1)
	}
}

func parseDrainOptions(args []string, goFlags *flag.FlagSet) (drainOptions, error) {
	o := drainOptions{timeout: 4 * time.Minute}
	fs := pflag.NewFlagSet("nodelet-approver "+drainCommand, pflag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig of the hook's identity (default: in-cluster, or $KUBECONFIG).")
	fs.StringVar(&o.nodeSelector, "node-selector", "", "Label selector of the release's companion Nodes, which are drained; only Nodes nodelet registered ("+"nodelet.dev/agent=nodelet) are ever selected (required).")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "How long the drain may take: a pod not evicted and gone by then fails it, named.")
	fs.AddGoFlagSet(goFlags)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if _, err := companionSelector(o.nodeSelector); err != nil {
		return o, err
	}
	if o.timeout <= 0 {
		return o, fmt.Errorf("--timeout %v: want a positive duration", o.timeout)
	}
	return o, nil
}

func runDrain(ctx context.Context, o drainOptions, log logr.Logger) error {
	config, err := restConfigFor(o.kubeconfig, "nodelet-approver/"+drainCommand)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	return drainCompanions(ctx, client, o, drainPollPeriod, log)
}

// podsToDrain are the pods of a node that its drain evicts and waits for,
// as `kubectl drain --ignore-daemonsets --force --delete-emptydir-data`
// picks them: every pod but a mirror pod (its kubelet's, not the API's to
// delete) and a DaemonSet's (its controller would make it again, and it
// goes with the DaemonSet's removal). A pod not controlled by anything
// and one with emptyDir data go too: the release, and so the node, goes.
// Pure.
func podsToDrain(pods []corev1.Pod) []corev1.Pod {
	var drain []corev1.Pod
	for _, pod := range pods {
		if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if owner := metav1.GetControllerOf(&pod); owner != nil && owner.Kind == "DaemonSet" && owner.APIVersion == "apps/v1" {
			continue
		}
		drain = append(drain, pod)
	}
	return drain
}

// drainCompanions cordons the release's companion Nodes, then, until no
// pod to drain is left on them or the timeout passes, evicts each one not
// yet being deleted and lists them again. An eviction refused with 429 (a
// PodDisruptionBudget that allows no disruption now) is asked again at
// the next round, as kubectl drain does; one refused otherwise too, its
// error kept. At the timeout, the error names each pod left and why.
func drainCompanions(ctx context.Context, client kubernetes.Interface, o drainOptions, poll time.Duration, log logr.Logger) error {
	selector, err := companionSelector(o.nodeSelector)
	if err != nil {
		return err
	}
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return fmt.Errorf("listing the companion Nodes %q: %w", selector, err)
	}
	nodes := make([]string, 0, len(list.Items))
	for i := range list.Items {
		n := &list.Items[i]
		nodes = append(nodes, n.Name)
		if n.Spec.Unschedulable {
			continue
		}
		// As kubectl cordon: no new pod is scheduled there while it drains.
		_, err := client.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("cordoning Node %s: %w", n.Name, err)
		}
		log.Info("Cordoned the companion Node", "node", n.Name)
	}
	// why is, for each node, each pod left there ("pod namespace/name on
	// node") and why it is; a node whose pods could not be listed keeps what its
	// last listing said.
	why := map[string]map[string]string{}
	err = wait.PollUntilContextTimeout(ctx, poll, o.timeout, true, func(ctx context.Context) (bool, error) {
		done := true
		for _, node := range nodes {
			pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
			if err != nil {
				log.Error(err, "Failed to list the companion's pods", "node", node)
				if why[node] == nil {
					why[node] = map[string]string{"the pods of Node " + node: fmt.Sprintf("not listed: %v", err)}
				}
				done = false
				continue
			}
			left := map[string]string{}
			for _, pod := range podsToDrain(pods.Items) {
				key := fmt.Sprintf("pod %s/%s on %s", pod.Namespace, pod.Name, node)
				reason := terminating
				if pod.DeletionTimestamp == nil {
					reason = evict(ctx, client, &pod, why[node][key] != "", log)
				}
				if reason == "" {
					continue
				}
				left[key] = reason
				if reason == terminating && why[node][key] != terminating {
					log.Info("Waiting for the pod to terminate", "pod", klog.KObj(&pod), "node", node)
				}
			}
			why[node] = left
			done = done && len(left) == 0
		}
		return done, nil
	})
	if err == nil {
		log.Info("Drained the companion Nodes", "nodes", nodes)
		return nil
	}
	said := []string{}
	for _, left := range why {
		for key, reason := range left {
			said = append(said, key+": "+reason)
		}
	}
	if len(said) == 0 {
		return fmt.Errorf("draining the companion Nodes %v: %w", nodes, err)
	}
	sort.Strings(said)
	return fmt.Errorf("draining the companion Nodes %v: not done in %v (%w): %s", nodes, o.timeout, err, strings.Join(said, "; "))
}

// terminating is what an evicted pod not yet gone is.
const terminating = "evicted, still terminating"

// evict asks the Eviction API to evict pod, and says what became of it
// (nothing when it is gone);
// again says it was asked before, when a refusal is not logged again.
func evict(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, again bool, log logr.Logger) string {
	eviction := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	// The UID: a pod of the same name made since is not this one's to evict.
	eviction.DeleteOptions = &metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))}
	// Not retried by the client: a 429 comes with a Retry-After of 10 s,
	// which client-go would wait for up to 10 times, past the deadline;
	// the next round asks again.
	err := client.CoreV1().RESTClient().Post().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("eviction").
		Body(eviction).MaxRetries(0).Do(ctx).Error()
	var status apierrors.APIStatus
	switch {
	case err == nil:
		log.Info("Evicted the pod", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
		return terminating
	case apierrors.IsNotFound(err):
		return ""
	case apierrors.IsTooManyRequests(err) && errors.As(err, &status):
		// A disruption budget: asked again at the next round.
		if !again {
			log.Info("Eviction refused for now, asking again", "pod", klog.KObj(pod), "reason", disruptionMessage(status.Status()))
		}
		return "not evicted: " + disruptionMessage(status.Status())
	default:
		if !again {
			log.Error(err, "Failed to evict the pod, asking again", "pod", klog.KObj(pod))
		}
		return fmt.Sprintf("not evicted: %v", err)
	}
}

// disruptionMessage is what a 429 from the Eviction API says, with the
// disruption budget's own cause when it gives one. Pure.
func disruptionMessage(status metav1.Status) string {
	said := []string{status.Message}
	if status.Details != nil {
		for _, cause := range status.Details.Causes {
			if cause.Message != "" {
				said = append(said, cause.Message)
			}
		}
	}
	return strings.Join(said, " ")
}
