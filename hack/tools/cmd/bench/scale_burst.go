package main

import (
	"context"
	"fmt"
	"log"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// burst creates a Deployment of nodes × pods-per-node replicas, waits for
// all its pods Running, scales it to zero and waits for them all gone.
func (r *scaleRun) burst(ctx context.Context, result *ScaleResult) error {
	const namespace = "scale"
	replicas := int32(r.f.nodes * r.f.podsPerNode)
	if _, err := r.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(r.client, 0, informers.WithNamespace(namespace))
	pods := factory.Core().V1().Pods().Lister()
	informerCtx, stopInformer := context.WithCancel(ctx)
	defer stopInformer()
	factory.Start(informerCtx.Done())
	factory.WaitForCacheSync(informerCtx.Done())

	appLabels := map[string]string{"app": "scale"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "scale"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: appLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: appLabels},
				Spec: corev1.PodSpec{
					// No token: the hollow nodelet mounts no volumes, and
					// both agents then make the same (no) token requests.
					AutomountServiceAccountToken: ptr.To(false),
					Containers:                   []corev1.Container{{Name: "pause", Image: r.f.image}},
				},
			},
		},
	}
	log.Printf("%s: creating a Deployment of %d pods", r.f.agent, replicas)
	meter, err := r.startWindow()
	if err != nil {
		return err
	}
	created := time.Now()
	if _, err := r.client.AppsV1().Deployments(namespace).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
		return err
	}
	selector := labels.SelectorFromSet(appLabels)
	running := 0
	err = wait.PollUntilContextTimeout(ctx, time.Second, r.f.timeout, false, func(context.Context) (bool, error) {
		if err := r.procs.alive(); err != nil {
			return false, err
		}
		list, err := pods.List(selector)
		if err != nil {
			return false, err
		}
		running = 0
		for _, pod := range list {
			if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
				running++
			}
		}
		return running >= int(replicas), nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d pods Running: %w", running, replicas, err)
	}
	result.RunningSeconds = time.Since(created).Seconds()
	if result.AgentRSSRunningBytes, err = rssOf(r.procs.pids()); err != nil {
		return err
	}
	log.Printf("%s: all %d pods Running in %.1fs; scaling to zero", r.f.agent, replicas, result.RunningSeconds)

	scaledDown := time.Now()
	patch := []byte(`{"spec":{"replicas":0}}`)
	if _, err := r.client.AppsV1().Deployments(namespace).Patch(ctx, "scale", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	left := 0
	err = wait.PollUntilContextTimeout(ctx, time.Second, r.f.timeout, false, func(context.Context) (bool, error) {
		if err := r.procs.alive(); err != nil {
			return false, err
		}
		list, err := pods.List(selector)
		left = len(list)
		return err == nil && left == 0, err
	})
	if err != nil {
		return fmt.Errorf("%d pods left: %w", left, err)
	}
	result.GoneSeconds = time.Since(scaledDown).Seconds()
	if result.Churn, err = meter.stop(); err != nil {
		return err
	}
	log.Printf("%s: all pods gone in %.1fs", r.f.agent, result.GoneSeconds)
	return r.client.AppsV1().Deployments(namespace).Delete(ctx, "scale", metav1.DeleteOptions{})
}

// watchesHeld reads apiserver_longrunning_requests{verb="WATCH"} by
// resource from the API server's metrics.
func watchesHeld(ctx context.Context, client kubernetes.Interface) (map[string]float64, error) {
	data, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	families, err := parseMetrics(data)
	if err != nil {
		return nil, err
	}
	watches := map[string]float64{}
	family, ok := families["apiserver_longrunning_requests"]
	if !ok {
		return watches, nil
	}
	for _, metric := range family.GetMetric() {
		var verb, resource string
		for _, label := range metric.GetLabel() {
			switch label.GetName() {
			case "verb":
				verb = label.GetValue()
			case "resource":
				resource = label.GetValue()
			}
		}
		if verb == "WATCH" {
			watches[resource] += metric.GetGauge().GetValue()
		}
	}
	return watches, nil
}
