//go:build full

package e2e

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestNetworkChurnWithNodeletKilledLeavesNothingBehind churns pods through
// the node, SIGKILLs nodelet in the middle of a burst of sandbox
// creations, and then finds the node's network exactly as its live pods
// need it. It kills nodelet, so it runs alone (no t.Parallel).
func TestNetworkChurnWithNodeletKilledLeavesNothingBehind(t *testing.T) {
	ns := f.NewNamespace(t)
	cidr := f.nodePodCIDR(t)
	// More pods than the node's pod CIDR has addresses: host-local hands
	// out addresses in turn, so it must come back to released ones.
	ones, bits := cidr.Mask.Size()
	const perRound = 24
	rounds := (1<<(bits-ones))/perRound + 2
	killRound := rounds / 2
	ipsOf := map[string][]types.UID{} // every IP handed out, to whom
	var mu sync.Mutex

	for round := range rounds {
		pods := make([]*corev1.Pod, perRound)
		for i := range pods {
			// A pod that exits on SIGTERM: the churn is in sandboxes,
			// not in waiting out grace periods.
			pods[i] = f.createPod(t, newPod(ns, fmt.Sprintf("churn-%d-%d", round, i)).withGracePeriod(0).
				withShell("trap 'exit 0' TERM; sleep 3600 & wait").obj())
		}
		if round == killRound {
			// In the middle of this burst's sandbox creations: as soon as
			// the runtime holds the first of them.
			await.Eventually(t, time.Minute, fmt.Sprintf("a sandbox of round %d", round), await.Condition(func(ctx context.Context) (bool, error) {
				for _, pod := range pods {
					sandboxes, err := f.listSandboxes(ctx, pod.UID)
					if err != nil || len(sandboxes) > 0 {
						return err == nil, err
					}
				}
				return false, nil
			}))
			if err := f.Nodelet.Kill(); err != nil {
				t.Fatalf("killing nodelet: %v", err)
			}
			t.Logf("killed nodelet in the middle of round %d", round)
			f.restartNodelet(t)
		}
		var wg sync.WaitGroup
		for i := range pods {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				pod, err := f.watchPod(t.Context(), pods[i], 3*time.Minute, runningAndReady)
				if err != nil {
					t.Errorf("pod %s: %v", pods[i].Name, err)
					return
				}
				pods[i] = pod
				mu.Lock()
				ipsOf[pod.Status.PodIP] = append(ipsOf[pod.Status.PodIP], pod.UID)
				mu.Unlock()
			}(i)
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		// The running pods of this round and the last, whose deletion is
		// under way, never share an address.
		live := map[string]string{}
		for _, pod := range pods {
			ip := pod.Status.PodIP
			if parsed := net.ParseIP(ip); parsed == nil || !cidr.Contains(parsed) {
				t.Errorf("pod %s has podIP %q, outside the node's pod CIDR %s", pod.Name, ip, cidr)
			}
			if other, dup := live[ip]; dup {
				t.Errorf("running pods %s and %s share podIP %s", other, pod.Name, ip)
			}
			live[ip] = pod.Name
		}
		for _, pod := range pods {
			f.deletePod(t, pod, nil)
		}
	}

	// Reused: some address went to more than one pod.
	reused := 0
	for _, uids := range ipsOf {
		if len(uids) > 1 {
			reused++
		}
	}
	if reused == 0 {
		t.Errorf("%d pods got %d distinct addresses, none handed out twice: released addresses were not reused", rounds*perRound, len(ipsOf))
	}

	// Once every churned pod is gone, the node holds exactly what its live
	// pods need: their addresses, one veth and one namespace each.
	var state string
	err := await.Poll(t.Context(), 3*time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		live, err := f.livePodIPs(ctx)
		if err != nil {
			return false, err
		}
		allocated, err := f.allocatedIPs()
		if err != nil {
			return false, err
		}
		veths, err := f.bridgeVeths()
		if err != nil {
			return false, err
		}
		mounts, err := f.netnsMounts()
		if err != nil {
			return false, err
		}
		ready, err := f.readyPodNetworkSandboxes(ctx)
		if err != nil {
			return false, err
		}
		var stale []string
		for ip := range allocated {
			if !live[ip] {
				stale = append(stale, ip)
			}
		}
		sort.Strings(stale)
		state = fmt.Sprintf("%d churned pods left in the API; stale allocations %v; %d veths and %d network namespaces for %d ready sandboxes",
			len(pods.Items), stale, len(veths), len(mounts), ready)
		return len(pods.Items) == 0 && len(stale) == 0 && len(allocated) == len(live) && len(veths) == ready && len(mounts) == ready, nil
	}))
	if err != nil {
		t.Fatalf("the node's network did not come back to its live pods: %v; last: %s", err, state)
	}

	if f.Env.agentMode() {
		t.Run("no sandbox had ADD run twice, and no attachment record is left", func(t *testing.T) {
			f.checkAgentCallLogs(t, rounds*perRound)
		})
	}
}
