//go:build full

package e2e

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Serial: the taint is on the whole node. The controller-manager's taint
// eviction controller deletes the pods that do not tolerate a NoExecute
// taint, the one under test and the stack's own among them; a
// ValidatingAdmissionPolicy refuses it pod deletions while the taint is
// on, so that what the test sees is nodelet's answer alone.
func TestNoExecuteTaintRejectsPodsThatDoNotTolerateIt(t *testing.T) {
	ns := f.NewNamespace(t)
	f.holdTaintEvictions(t, ns)
	taint := corev1.Taint{Key: "nodelet.dev/e2e-admission", Value: "x", Effect: corev1.TaintEffectNoExecute}
	f.setNodeTaints(t, func(taints []corev1.Taint) []corev1.Taint { return append(taints, taint) })
	t.Cleanup(func() {
		f.setNodeTaints(t, func(taints []corev1.Taint) []corev1.Taint {
			return slices.DeleteFunc(taints, func(x corev1.Taint) bool { return x.Key == taint.Key })
		})
	})

	intolerant := f.createPod(t, newPod(ns, "intolerant").with(f.onNode).obj())
	tolerant := f.createPod(t, newPod(ns, "tolerant").with(f.onNode).with(func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	}).obj())
	f.waitRejected(t, intolerant, "TaintToleration", "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate")
	f.waitForPod(t, tolerant, podStartTimeout, "to be Running and Ready", runningAndReady)
}
