package runtime

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestCheckUserNamespace(t *testing.T) {
	hostUsers := func(v *bool) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		p.Spec.HostUsers = v
		return p
	}
	tests := map[string]struct {
		pod      *corev1.Pod
		handler  string
		handlers []runtimeHandler
		wantErr  string
	}{
		"hostUsers unset runs on any runtime": {pod: hostUsers(nil)},
		"hostUsers true runs on any runtime":  {pod: hostUsers(ptr.To(true))},
		"hostUsers false on a runtime listing no handlers": {pod: hostUsers(ptr.To(false)),
			wantErr: "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		"hostUsers false on a default handler without them": {pod: hostUsers(ptr.To(false)),
			handlers: []runtimeHandler{{Name: ""}, {Name: "kata", UserNamespaces: true}},
			wantErr:  "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		"hostUsers false on a RuntimeClass handler without them": {pod: hostUsers(ptr.To(false)), handler: "runc-alt",
			handlers: []runtimeHandler{{Name: "", UserNamespaces: true}, {Name: "runc-alt"}},
			wantErr:  "can't set `spec.hostUsers: false`, RuntimeClass handler \"runc-alt\" does not support user namespaces"},
		"hostUsers false on a handler the runtime does not know": {pod: hostUsers(ptr.To(false)), handler: "gone",
			handlers: []runtimeHandler{{Name: "", UserNamespaces: true}},
			wantErr:  "can't set `spec.hostUsers: false`, RuntimeClass handler \"gone\" does not support user namespaces: the handler \"gone\" is not known"},
		"hostUsers false on a default handler with them": {pod: hostUsers(ptr.To(false)),
			handlers: []runtimeHandler{{Name: "", UserNamespaces: true}}},
		"hostUsers false on a RuntimeClass handler with them": {pod: hostUsers(ptr.To(false)), handler: "runc-userns",
			handlers: []runtimeHandler{{Name: ""}, {Name: "runc-userns", UserNamespaces: true}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkUserNamespace(tc.pod, tc.handler, tc.handlers)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("checkUserNamespace() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("checkUserNamespace() = %v, want an error holding %q", err, tc.wantErr)
			}
		})
	}
}
