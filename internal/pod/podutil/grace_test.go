package podutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestTerminationGracePeriodSeconds(t *testing.T) {
	deleted := ptr.To(metav1.Now())
	tests := []struct {
		name           string
		spec           *int64
		deletedAt      *metav1.Time
		deletionPeriod *int64
		want           int64
	}{
		{name: "neither set: the API's default", want: 30},
		{name: "the spec's", spec: ptr.To[int64](5), want: 5},
		{name: "the spec's zero", spec: ptr.To[int64](0), want: 0},
		{name: "a delete's own", spec: ptr.To[int64](60), deletedAt: deleted, deletionPeriod: ptr.To[int64](3), want: 3},
		{name: "a delete's zero (force)", spec: ptr.To[int64](60), deletedAt: deleted, deletionPeriod: ptr.To[int64](0), want: 0},
		{name: "a delete without its own: the spec's", spec: ptr.To[int64](7), deletedAt: deleted, want: 7},
		// The API server sets both together; a deletion period on a pod
		// not being deleted is not a delete.
		{name: "a deletion period without a delete: the spec's", spec: ptr.To[int64](7), deletionPeriod: ptr.To[int64](1), want: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: tt.deletedAt, DeletionGracePeriodSeconds: tt.deletionPeriod},
				Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: tt.spec},
			}
			if got := TerminationGracePeriodSeconds(pod); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}
