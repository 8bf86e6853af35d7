package network

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil/prereq"
)

func TestAgentRestartKeepsAttachmentsAndCollectsTheGone(t *testing.T) {
	requireRootAndPlugins(t)
	n := newTestNet(t, "10.123.4.0/24")
	live, broken, gone := newNetNS(t), newNetNS(t), newNetNS(t)
	mustAdd(t, n.agent, request("ADD", "live", live))
	brokenResult := mustAdd(t, n.agent, request("ADD", "broken", broken))
	mustAdd(t, n.agent, request("ADD", "gone", gone))
	liveIPs, _ := n.agent.PodIPs("live")
	brokenIPs, _ := n.agent.PodIPs("broken")
	waitBaselined(t, n.agent, "live")
	waitBaselined(t, n.agent, "broken")

	// nodelet stops; meanwhile the runtime removes sandbox gone without
	// reaching it, and someone deletes sandbox broken's veth.
	removeNetNS(gone)
	inNS(t, n.hostNS, "ip", "link", "delete", hostVeth(t, brokenResult, n.bridge))
	n.setSandbox("live", SandboxReady)
	n.setSandbox("broken", SandboxReady)
	restarted := n.newAgent(t)

	if ips, known := restarted.PodIPs("live"); !known || !slices.Equal(ips, liveIPs) {
		t.Errorf("after a restart PodIPs(live) = %v, %v; want %v from the cache", ips, known, liveIPs)
	}
	restarted.garbageCollect(context.Background())
	want := append(append([]string(nil), liveIPs...), brokenIPs...)
	slices.Sort(want)
	if got := n.allocated(t); !slices.Equal(got, want) {
		t.Errorf("host-local holds %v after garbage collection, want only the ready sandboxes' %v", got, want)
	}
	if _, known := restarted.PodIPs("gone"); known {
		t.Errorf("the removed sandbox's attachment is still known")
	}

	// The CHECK after the restart finds the broken one, and only it.
	restarted.checkAll(context.Background())
	if reported := len(n.brokenCh); reported != 1 {
		t.Fatalf("%d networks reported broken after the restart, want 1", reported)
	}
	<-n.brokenCh
	if ips, known := restarted.PodIPs("broken"); !known || len(ips) != 0 {
		t.Errorf("PodIPs(broken) = %v, %v; want none, known", ips, known)
	}
	if ips, _ := restarted.PodIPs("live"); !slices.Equal(ips, liveIPs) {
		t.Errorf("PodIPs(live) = %v, want %v", ips, liveIPs)
	}
}

func TestAgentCollectsAnAddCutShort(t *testing.T) {
	requireRootAndPlugins(t)
	prereq.CNIPlugins(t, pluginDir, "tuning")
	n := newTestNet(t, "10.123.5.0/24")
	// A list whose last plugin fails: the bridge has allocated an address
	// when the ADD fails, as when nodelet dies in the middle of one.
	conf := `{"cniVersion":"1.0.0","name":"testnet","plugins":[
	  {"type":"bridge","bridge":"` + n.bridge + `","isGateway":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.123.5.0/24"}]],"dataDir":"` + n.ipamDir + `"}},
	  {"type":"tuning","sysctl":{"net.no.such.sysctl":"1"}}]}`
	if err := os.WriteFile(filepath.Join(n.opts.ConfDir, "10-testnet.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	sandbox := newNetNS(t)
	resp := n.agent.Handle(context.Background(), request("ADD", "cut", sandbox))
	if resp.Error == nil {
		t.Fatal("ADD succeeded, want the tuning plugin's failure")
	}
	if got := n.allocated(t); len(got) != 1 {
		t.Fatalf("host-local holds %v after the failed ADD, want the bridge's one address", got)
	}
	removeNetNS(sandbox) // the runtime removes a failed sandbox's namespace
	n.newAgent(t).garbageCollect(context.Background())
	if got := n.allocated(t); len(got) != 0 {
		t.Errorf("host-local still holds %v after garbage collection", got)
	}
}

func TestIsStale(t *testing.T) {
	tests := map[string]struct {
		added, netns bool
		sandbox      SandboxState
		age          time.Duration
		want         bool
	}{
		"a ready sandbox's attachment stays":                                 {added: true, netns: true, sandbox: SandboxReady, want: false},
		"a stopped sandbox's attachment goes":                                {added: true, netns: true, sandbox: SandboxNotReady, want: true},
		"an ADD cut short goes":                                              {added: false, netns: true, sandbox: SandboxAbsent, want: true},
		"an attachment whose namespace is gone goes":                         {added: true, netns: false, sandbox: SandboxAbsent, want: true},
		"an unlisted sandbox with its namespace may still be being created":  {added: true, netns: true, sandbox: SandboxAbsent, age: time.Minute, want: false},
		"an unlisted sandbox with its namespace goes after the grace period": {added: true, netns: true, sandbox: SandboxAbsent, age: 3 * time.Minute, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := isStale(tc.added, tc.netns, tc.sandbox, tc.age); got != tc.want {
				t.Errorf("isStale() = %v, want %v", got, tc.want)
			}
		})
	}
}
