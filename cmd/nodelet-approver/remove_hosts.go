package main

// The post-delete hook's second part: on each host the DaemonSets ran on,
// a pod of the chart's (clean-host, bound to the host by its nodeName)
// removes the chart's host folders and the mounts under them, then goes.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// parseCleanPod is --clean-host-pod: the pod the chart runs on each host,
// as YAML or JSON, without a node or a name.
func parseCleanPod(s string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict([]byte(s), pod); err != nil {
		return nil, fmt.Errorf("--clean-host-pod: %w", err)
	}
	if pod.GenerateName == "" || len(pod.Spec.Containers) == 0 || pod.Spec.NodeName != "" {
		return nil, errors.New("--clean-host-pod: want a pod with a generateName and containers, and no nodeName (each host's is set)")
	}
	return pod, nil
}

// hostsOf are the hosts the chart's pods ran on: those of the DaemonSets'
// pods seen, and those of the companion Nodes, whose names are their
// host's with suffix. Sorted, once each. Pure.
func hostsOf(podNodes, companions []string, suffix string) []string {
	var hosts []string
	for _, n := range podNodes {
		if n != "" {
			hosts = append(hosts, n)
		}
	}
	for _, c := range companions {
		if host, ok := strings.CutSuffix(c, suffix); ok && suffix != "" && host != "" {
			hosts = append(hosts, host)
		}
	}
	sort.Strings(hosts)
	return slices.Compact(hosts)
}

// cleanPodFor is the chart's pod bound to host. Pure.
func cleanPodFor(template *corev1.Pod, namespace, host string) *corev1.Pod {
	pod := template.DeepCopy()
	pod.Namespace = namespace
	pod.Spec.NodeName = host
	return pod
}

// cleanHosts runs the chart's pod on each host, waits up to timeout for
// all of them to end, and deletes them. A pod that failed, or did not end
// in time (its host down, its image not pulled), is an error naming its
// host and what it said.
func cleanHosts(ctx context.Context, client kubernetes.Interface, template *corev1.Pod, namespace string, hosts []string, poll, timeout time.Duration, log logr.Logger) error {
	var errs []error
	pending := map[string]string{} // pod name → host
	for _, host := range hosts {
		pod, err := client.CoreV1().Pods(namespace).Create(ctx, cleanPodFor(template, namespace, host), metav1.CreateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("creating the pod that cleans host %s: %w", host, err))
			continue
		}
		log.Info("Created the pod that cleans the host", "pod", pod.Name, "node", host)
		pending[pod.Name] = host
	}
	created := make([]string, 0, len(pending))
	for name := range pending {
		created = append(created, name)
	}
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		for name, host := range pending {
			pod, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				log.Error(err, "Failed to read the pod that cleans the host", "pod", name, "node", host)
				continue
			}
			switch pod.Status.Phase {
			case corev1.PodSucceeded:
				log.Info("Cleaned the host", "node", host)
				delete(pending, name)
			case corev1.PodFailed:
				errs = append(errs, fmt.Errorf("cleaning host %s (pod %s): %s", host, name, podFailure(pod)))
				delete(pending, name)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		for name, host := range pending {
			errs = append(errs, fmt.Errorf("cleaning host %s (pod %s): not done in %v: %w", host, name, timeout, err))
		}
	}
	for _, name := range created {
		err := client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting pod %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// podFailure is what a failed pod says: its containers' termination
// messages (the clean-host command's error), else its reason.
func podFailure(pod *corev1.Pod) string {
	var said []string
	for _, s := range pod.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			said = append(said, fmt.Sprintf("exit code %d: %s", t.ExitCode, strings.TrimSpace(t.Message)))
		}
	}
	if len(said) == 0 {
		return fmt.Sprintf("%s: %s", pod.Status.Reason, pod.Status.Message)
	}
	return strings.Join(said, "; ")
}
