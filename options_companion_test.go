package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestRegisterWithTaintsFlag(t *testing.T) {
	opts, err := parseOptions([]string{"--node-name=n", "--register-with-taints=a=1:NoSchedule", "--register-with-taints=nodelet.dev/companion:NoSchedule,b:NoExecute"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Given again, the flag replaces the list, as the kubelet's.
	want := []corev1.Taint{
		{Key: "nodelet.dev/companion", Effect: corev1.TaintEffectNoSchedule},
		{Key: "b", Effect: corev1.TaintEffectNoExecute},
	}
	if diff := cmp.Diff(want, opts.RegisterWithTaints); diff != "" {
		t.Errorf("RegisterWithTaints mismatch (-want +got):\n%s", diff)
	}
	if _, err := parseOptions([]string{"--node-name=n", "--register-with-taints=a:Never"}, nil); err == nil || !strings.Contains(err.Error(), "register-with-taints") {
		t.Errorf("a bad taint: error = %v, want one naming --register-with-taints", err)
	}
}
