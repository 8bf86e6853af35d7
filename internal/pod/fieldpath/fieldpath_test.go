package fieldpath

// Pure tests: a pod in, field values out.

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodField(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop", UID: "uid-1",
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": `say "hi"`},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "builder"},
	}
	cases := map[string]struct {
		fieldPath string
		want      string
		wantErr   bool
	}{
		"the pod's name":                {fieldPath: "metadata.name", want: "web"},
		"its namespace":                 {fieldPath: "metadata.namespace", want: "shop"},
		"its UID":                       {fieldPath: "metadata.uid", want: "uid-1"},
		"its node":                      {fieldPath: "spec.nodeName", want: "node-1"},
		"its service account":           {fieldPath: "spec.serviceAccountName", want: "builder"},
		"one label":                     {fieldPath: "metadata.labels['tier']", want: "front"},
		"a label it does not have":      {fieldPath: "metadata.labels['nope']", want: ""},
		"one annotation":                {fieldPath: "metadata.annotations['note']", want: `say "hi"`},
		"all labels, sorted and quoted": {fieldPath: "metadata.labels", want: "app=\"web\"\ntier=\"front\""},
		"all annotations":               {fieldPath: "metadata.annotations", want: `note="say \"hi\""`},
		"a subscript on a plain field":  {fieldPath: "metadata.name['x']", wantErr: true},
		"a field it does not serve":     {fieldPath: "status.podIP", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := PodField(pod, tc.fieldPath)
			if (err != nil) != tc.wantErr {
				t.Fatalf("PodField(%q) error = %v, want error %v", tc.fieldPath, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("PodField(%q) = %q, want %q", tc.fieldPath, got, tc.want)
			}
		})
	}
}
