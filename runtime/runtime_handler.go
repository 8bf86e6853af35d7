package runtime

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// sandboxRuntimeHandler is the runtime handler a new sandbox of the pod
// runs under: its RuntimeClass's, or the default. As under the kubelet, a
// RuntimeClass that cannot be read, or a user namespace the handler cannot
// give, fails the sandbox; the pod waits and is tried again.
func (m *Manager) sandboxRuntimeHandler(ctx context.Context, pod *corev1.Pod) (string, error) {
	var handler string
	if name := pod.Spec.RuntimeClassName; name != nil && *name != "" && m.config.RuntimeClasses != nil {
		var err error
		if handler, err = m.config.RuntimeClasses.Handler(ctx, *name); err != nil {
			return "", err
		}
		klog.FromContext(ctx).V(2).Info("Running pod with runtime handler", "pod", klog.KObj(pod), "runtimeHandler", handler)
	}
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		if err := checkUserNamespace(pod, handler, m.runtimeHandlers(ctx)); err != nil {
			return "", err
		}
	}
	return handler, nil
}

// runtimeHandlers are the handlers the runtime lists in its status, with
// what they support; none when it lists none (containerd 1.6) or cannot
// be asked.
func (m *Manager) runtimeHandlers(ctx context.Context) []runtimeHandler {
	resp, err := m.runtime.Status(ctx, false)
	if err != nil {
		klog.FromContext(ctx).Info("Failed to read the runtime's handlers", "err", err.Error())
		return nil
	}
	var handlers []runtimeHandler
	for _, h := range resp.GetRuntimeHandlers() {
		handlers = append(handlers, runtimeHandler{Name: h.GetName(), UserNamespaces: h.GetFeatures().GetUserNamespaces()})
	}
	return handlers
}
