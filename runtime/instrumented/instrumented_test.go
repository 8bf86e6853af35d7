package instrumented

// Unit tests over the CRI fakes of k8s.io/cri-api/pkg/apis/testing: what
// matters here is what the wrapper counts, not what a runtime does.

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
)

// counts reads the three runtime_operations series of one operation.
func counts(t *testing.T, operation string) (total, errs float64, observed uint64) {
	t.Helper()
	total = testutil.ToFloat64(kubeletmetrics.RuntimeOperations.WithLabelValues(operation))
	errs = testutil.ToFloat64(kubeletmetrics.RuntimeOperationsErrors.WithLabelValues(operation))
	var m dto.Metric
	if err := kubeletmetrics.RuntimeOperationsDuration.WithLabelValues(operation).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return total, errs, m.GetHistogram().GetSampleCount()
}

func TestEachCallIsCountedTimedAndItsErrorsCounted(t *testing.T) {
	fake := critest.NewFakeRuntimeService()
	rs := RuntimeService(fake)
	ctx := t.Context()

	total0, errs0, observed0 := counts(t, "run_podsandbox")
	if _, err := rs.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "u1", Namespace: "ns"}}, ""); err != nil {
		t.Fatal(err)
	}
	fake.InjectError("RunPodSandbox", errors.New("no space left on device"))
	if _, err := rs.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "u2", Namespace: "ns"}}, ""); err == nil {
		t.Fatal("the injected error was not returned")
	}
	total, errs, observed := counts(t, "run_podsandbox")
	if total-total0 != 2 || errs-errs0 != 1 || observed-observed0 != 2 {
		t.Errorf("after two RunPodSandbox calls, one failing: total +%v, errors +%v, durations +%v; want +2, +1, +2",
			total-total0, errs-errs0, observed-observed0)
	}
}

func TestImageCallsAreCountedUnderTheKubeletsNames(t *testing.T) {
	fake := critest.NewFakeImageService()
	is := ImageService(fake)
	before, _, _ := counts(t, "pull_image")
	if _, err := is.PullImage(t.Context(), &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if after, _, _ := counts(t, "pull_image"); after-before != 1 {
		t.Errorf("pull_image counted %v times for one pull", after-before)
	}
}
