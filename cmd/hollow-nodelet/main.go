// hollow-nodelet runs many hollow nodelets (package hollow) in one
// process, one per kubeconfig file in --kubeconfig-dir, each as its own
// node: nodelet's API-facing work over a fake CRI, for measuring what a
// cluster of nodelets costs its control plane (`make bench-scale`).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodelet/nodelet/internal/hollow"
	"github.com/nodelet/nodelet/internal/util/timerslack"
)

// version is what the hollow nodes report as nodeInfo.kubeletVersion;
// -ldflags "-X main.version=..." sets nodelet's.
var version = "v0.1.0-hollow"

type options struct {
	kubeconfigDir string
	stateDir      string
	podCIDRs      string
	nodeIP        string
	clusterDNS    []string
	clusterDomain string
	cpu           string
	memory        string
	storage       string
	maxPods       int
	timerSlack    time.Duration
}

func main() {
	var opts options
	fs := pflag.NewFlagSet("hollow-nodelet", pflag.ExitOnError)
	fs.StringVar(&opts.kubeconfigDir, "kubeconfig-dir", "", "Folder of NAME.kubeconfig files: one hollow node NAME for each, speaking to the API server with it (required).")
	fs.StringVar(&opts.stateDir, "state-dir", "", "Folder for the nodes' pod folders and logs, one sub-folder per node (required).")
	fs.StringVar(&opts.podCIDRs, "pod-cidrs", "10.128.0.0/9", "Range the nodes' fake pod IPs come from: a /20 of it per node, in the order of the nodes' names.")
	fs.StringVar(&opts.nodeIP, "node-ip", "", "The nodes' InternalIP (default: the host's).")
	fs.StringSliceVar(&opts.clusterDNS, "cluster-dns", nil, "The cluster DNS server(s) pods of DNS policy ClusterFirst use, as nodelet's --cluster-dns (default: none, and such pods get the MissingClusterDNS events).")
	fs.StringVar(&opts.clusterDomain, "cluster-domain", "cluster.local", "The cluster's DNS domain, as nodelet's --cluster-domain.")
	fs.StringVar(&opts.cpu, "cpu", "4", "Each node's CPU capacity.")
	fs.StringVar(&opts.memory, "memory", "16Gi", "Each node's memory capacity.")
	fs.StringVar(&opts.storage, "ephemeral-storage", "100Gi", "Each node's ephemeral-storage capacity.")
	fs.IntVar(&opts.maxPods, "max-pods", 0, "Each node's pods capacity (default: nodelet's, 110).")
	fs.DurationVar(&opts.timerSlack, "timer-slack", timerslack.Default, "The process's threads' timer slack, as nodelet's --timer-slack; 0 leaves the kernel's.")
	zapOpts := zap.Options{TimeEncoder: zapcore.ISO8601TimeEncoder}
	goFlags := flag.NewFlagSet("log", flag.ExitOnError)
	zapOpts.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)
	_ = fs.Parse(os.Args[1:])
	log := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	if opts.timerSlack > 0 {
		// As nodelet, so that its per-node figures are nodelet's.
		if err := timerslack.Set(opts.timerSlack); err != nil {
			log.Error(err, "Could not widen the timer slack", "timerSlack", opts.timerSlack)
		}
	}

	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		log.Error(err, "hollow-nodelet stopped")
		os.Exit(1)
	}
}

func run(ctx context.Context, opts options) error {
	if opts.kubeconfigDir == "" || opts.stateDir == "" {
		return fmt.Errorf("--kubeconfig-dir and --state-dir are required")
	}
	files, err := filepath.Glob(filepath.Join(opts.kubeconfigDir, "*.kubeconfig"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no *.kubeconfig files in %s", opts.kubeconfigDir)
	}
	sort.Strings(files)
	cidrs, err := netip.ParsePrefix(opts.podCIDRs)
	if err != nil {
		return fmt.Errorf("--pod-cidrs: %w", err)
	}
	if want := 1 << (20 - cidrs.Bits()); cidrs.Bits() > 20 || len(files) > want {
		return fmt.Errorf("--pod-cidrs %s holds fewer than %d /20s", cidrs, len(files))
	}
	capacity := map[string]int64{}
	for name, value := range map[string]string{"cpu": opts.cpu, "memory": opts.memory, "ephemeral-storage": opts.storage} {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return fmt.Errorf("--%s: %w", name, err)
		}
		if name == "cpu" {
			capacity[name] = q.MilliValue()
		} else {
			capacity[name] = q.Value()
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(files))
	var wg sync.WaitGroup
	for i, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".kubeconfig")
		config, err := clientcmd.BuildConfigFromFlags("", file)
		if err != nil {
			return fmt.Errorf("node %s: loading %s: %w", name, file, err)
		}
		nodeOpts := hollow.Options{
			NodeName:              name,
			Config:                config,
			StateDir:              filepath.Join(opts.stateDir, name),
			PodCIDR:               nthSubnet(cidrs, 20, i),
			NodeIP:                opts.nodeIP,
			ClusterDNS:            opts.clusterDNS,
			ClusterDomain:         opts.clusterDomain,
			MilliCPUs:             capacity["cpu"],
			MemoryBytes:           capacity["memory"],
			EphemeralStorageBytes: capacity["ephemeral-storage"],
			MaxPods:               opts.maxPods,
			Version:               version,
			Log:                   ctrl.Log.WithValues("node", name),
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := hollow.Run(ctx, nodeOpts); err != nil {
				errs <- fmt.Errorf("node %s: %w", name, err)
				cancel()
			}
		}()
	}
	ctrl.Log.Info("Started hollow nodes", "nodes", len(files), "version", version)
	wg.Wait()
	close(errs)
	return <-errs
}

// nthSubnet is the n-th subnet of size bits in prefix (IPv4).
func nthSubnet(prefix netip.Prefix, bits, n int) netip.Prefix {
	base := prefix.Masked().Addr().As4()
	v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	v += uint32(n) << (32 - bits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), bits)
}
