package main

// `nodelet-approver check-companions`: the chart's `helm test`. It passes
// once the release has a companion Node and every one is Ready, and names
// those that are not when its time is up.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// checkCommand is the sub command's name.
const checkCommand = "check-companions"

// checkPollPeriod is how often the companion Nodes are listed.
const checkPollPeriod = 2 * time.Second

type checkOptions struct {
	kubeconfig   string
	nodeSelector string
	timeout      time.Duration
}

func mainCheck(args []string, goFlags *flag.FlagSet, zapOpts *zap.Options) {
	opts, err := parseCheckOptions(args, goFlags)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodelet-approver %s: %v\n", checkCommand, err)
		os.Exit(2)
	}
	log := zap.New(zap.UseFlagOptions(zapOpts))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	if err := runCheck(ctrl.SetupSignalHandler(), opts, log.WithName(checkCommand)); err != nil {
		log.Error(err, "The release's companions are not Ready")
		os.Exit(1)
	}
}

func parseCheckOptions(args []string, goFlags *flag.FlagSet) (checkOptions, error) {
	o := checkOptions{timeout: 2 * time.Minute}
	fs := pflag.NewFlagSet("nodelet-approver "+checkCommand, pflag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig of the test's identity (default: in-cluster, or $KUBECONFIG).")
	fs.StringVar(&o.nodeSelector, "node-selector", "", "Label selector of the release's companion Nodes; only Nodes nodelet registered are selected (required).")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "How long to wait for a companion and for every one to be Ready.")
	fs.AddGoFlagSet(goFlags)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if _, err := companionSelector(o.nodeSelector); err != nil {
		return o, err
	}
	return o, nil
}

func runCheck(ctx context.Context, o checkOptions, log logr.Logger) error {
	config, err := restConfigFor(o.kubeconfig, "nodelet-approver/"+checkCommand)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	return checkCompanions(ctx, client, o, checkPollPeriod, log)
}

// checkCompanions waits until the selected companion Nodes are at least
// one and all Ready.
func checkCompanions(ctx context.Context, client kubernetes.Interface, o checkOptions, poll time.Duration, log logr.Logger) error {
	selector, err := companionSelector(o.nodeSelector)
	if err != nil {
		return err
	}
	var notReady []string
	err = wait.PollUntilContextTimeout(ctx, poll, o.timeout, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			log.Error(err, "Failed to list the companion Nodes", "selector", selector.String())
			return false, nil
		}
		var ready []string
		ready, notReady = companionsReady(list.Items)
		if len(ready) > 0 && len(notReady) == 0 {
			log.Info("Every companion is Ready", "nodes", ready)
			return true, nil
		}
		log.Info("Waiting for the companions to be Ready", "ready", ready, "notReady", notReady)
		return false, nil
	})
	switch {
	case err == nil:
		return nil
	case len(notReady) > 0:
		return fmt.Errorf("companion Nodes not Ready after %s: %s: %w", o.timeout, strings.Join(notReady, "; "), err)
	default:
		return fmt.Errorf("no companion Node %q after %s: %w", selector.String(), o.timeout, err)
	}
}

// companionsReady splits the Nodes into the Ready ones' names and the
// others', each with its Ready condition's reason and message. Pure.
func companionsReady(nodes []corev1.Node) (ready, notReady []string) {
	for i := range nodes {
		node := &nodes[i]
		condition := corev1.NodeCondition{Reason: "NoReadyCondition"}
		if j := slices.IndexFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady }); j >= 0 {
			condition = node.Status.Conditions[j]
		}
		if condition.Status == corev1.ConditionTrue {
			ready = append(ready, node.Name)
			continue
		}
		notReady = append(notReady, fmt.Sprintf("%s (%s: %s)", node.Name, condition.Reason, condition.Message))
	}
	slices.Sort(ready)
	slices.Sort(notReady)
	return ready, notReady
}
