package runtime

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// runtimeHandler is one of the runtime's handlers as CRI RuntimeStatus
// lists them; the default handler's name is empty.
type runtimeHandler struct {
	Name           string
	UserNamespaces bool
}

// checkUserNamespace says whether a pod's sandbox can be made under
// handler (the runtime handler its RuntimeClass names, empty for the
// default) as far as user namespaces go, given the runtime's handlers: a
// pod on the host's user namespace always can; one that asks for its own
// (hostUsers: false) gets the kubelet's words when the runtime cannot give
// it one. A runtime that lists no handlers (containerd 1.6) is one that
// cannot, as the kubelet reads it. The error is the sandbox's failure.
func checkUserNamespace(pod *corev1.Pod, handler string, handlers []runtimeHandler) error {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return nil
	}
	supported, err := handlerSupportsUserNamespaces(handler, handlers)
	if err == nil && supported {
		return nil
	}
	msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	if handler != "" {
		msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
	}
	if err != nil {
		return fmt.Errorf("%v: %w", msg, err)
	}
	return errors.New(msg)
}

func handlerSupportsUserNamespaces(handler string, handlers []runtimeHandler) (bool, error) {
	if len(handlers) == 0 {
		return false, nil
	}
	for _, h := range handlers {
		if h.Name == handler {
			return h.UserNamespaces, nil
		}
	}
	return false, fmt.Errorf("the handler %q is not known", handler)
}
