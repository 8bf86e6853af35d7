package main

// `nodelet-approver clean-host`: what the chart put on one host, removed
// by a pod the post-delete hook runs on that host once the DaemonSets'
// pods are gone (remove_hosts.go): every mount under the chart's host
// folders (the pods' network namespaces and tmpfs volumes, containers'
// root file systems, sub paths' bind mounts), then the folders; the
// iptables rules of the chart's network's pods; the pods' bridge.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodelet/nodelet/internal/volume"
)

// cleanCommand is the sub command's name.
const cleanCommand = "clean-host"

type cleanOptions struct {
	// hostRoot is where the host's / is mounted in the pod, with
	// Bidirectional propagation: an unmount there is the host's.
	hostRoot string
	// dirs are the chart's host folders, removed with everything in
	// them; ifEmpty are folders removed after them when nothing else is
	// left in them (the chart's parents of its folders).
	dirs, ifEmpty []string
	// bridge, when set, is the pods' bridge, deleted from the host's
	// network (the pod is on it).
	bridge string
	// network, when set, is the chart's CNI network, whose pods' iptables
	// rules and chains are removed (iptables.go).
	network string
}

func mainClean(args []string, goFlags *flag.FlagSet, zapOpts *zap.Options) {
	opts, err := parseCleanOptions(args, goFlags)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodelet-approver %s: %v\n", cleanCommand, err)
		os.Exit(2)
	}
	log := zap.New(zap.UseFlagOptions(zapOpts))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	if err := cleanHost(ctrl.SetupSignalHandler(), opts, log.WithName(cleanCommand)); err != nil {
		log.Error(err, "Failed to remove the chart's host folders")
		// The hook reads it as the pod's termination message.
		_ = os.WriteFile("/dev/termination-log", []byte(err.Error()), 0o644)
		os.Exit(1)
	}
}

func parseCleanOptions(args []string, goFlags *flag.FlagSet) (cleanOptions, error) {
	o := cleanOptions{hostRoot: "/host"}
	fs := pflag.NewFlagSet("nodelet-approver "+cleanCommand, pflag.ContinueOnError)
	fs.StringVar(&o.hostRoot, "host-root", o.hostRoot, "Where the host's / is mounted, with Bidirectional propagation; / on the host itself.")
	fs.StringSliceVar(&o.dirs, "dir", nil, "A host folder of the chart's, removed with every mount under it and everything in it (repeatable, required).")
	fs.StringSliceVar(&o.ifEmpty, "dir-if-empty", nil, "A host folder removed after the --dir ones when it is empty (repeatable).")
	fs.StringVar(&o.bridge, "bridge", "", "The pods' bridge, deleted from the network namespace of the command (the host's, on the host's network); none: no bridge is deleted.")
	fs.StringVar(&o.network, "cni-network", "", "The chart's CNI network: the iptables rules its plugins tagged with its name for its pods, and the chains only they jump to, are removed from the command's network namespace (the host's); none: no rule is removed.")
	fs.AddGoFlagSet(goFlags)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if len(o.dirs) == 0 {
		return o, errors.New("--dir is required")
	}
	// The host's root is / when the command runs on the host itself.
	if o.hostRoot != "/" {
		if err := checkHostFolder(o.hostRoot); err != nil {
			return o, fmt.Errorf("--host-root: %w", err)
		}
	}
	for _, dir := range append(slices.Clone(o.dirs), o.ifEmpty...) {
		if err := checkHostFolder(dir); err != nil {
			return o, err
		}
	}
	return o, nil
}

// checkHostFolder refuses a folder that is not a clean absolute path, or
// is the root: the command removes what it is given. Pure.
func checkHostFolder(dir string) error {
	if !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/" {
		return fmt.Errorf("%q: want a clean absolute path other than /", dir)
	}
	return nil
}

// cleanHost unmounts everything under each of the chart's folders and
// removes them, then removes the if-empty ones that are, removes the
// network's iptables rules and deletes the pods' bridge. A folder still
// mounted is not removed: what is mounted there may be another's (a
// hostPath's sub path). It goes on after a failure, and reports them all.
func cleanHost(ctx context.Context, o cleanOptions, log logr.Logger) error {
	var errs []error
	for _, dir := range o.dirs {
		if err := removeHostFolder(filepath.Join(o.hostRoot, dir), log); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", dir, err))
			continue
		}
		log.Info("Removed the host folder", "path", dir)
	}
	for _, dir := range o.ifEmpty {
		err := unix.Rmdir(filepath.Join(o.hostRoot, dir))
		switch {
		case err == nil:
			log.Info("Removed the empty host folder", "path", dir)
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST), errors.Is(err, unix.EBUSY):
		default:
			errs = append(errs, fmt.Errorf("removing %s: %w", dir, err))
		}
	}
	if o.network != "" {
		rules, chains, err := removeNetworkRules(ctx, o.network)
		switch {
		case err != nil:
			errs = append(errs, err)
		case rules+chains > 0:
			log.Info("Removed the network's iptables rules", "network", o.network, "rules", rules, "chains", chains)
		}
	}
	if o.bridge != "" {
		deleted, err := deleteLink(o.bridge)
		switch {
		case err != nil:
			errs = append(errs, err)
		case deleted:
			log.Info("Deleted the pods' bridge", "bridge", o.bridge)
		}
	}
	return errors.Join(errs...)
}

// removeHostFolder unmounts every mount at or under dir, then removes it.
// A symlink is refused, not followed: it would be followed in the pod's
// view, not the host's.
func removeHostFolder(dir string, log logr.Logger) error {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return errors.New("is a symlink, which is not followed")
	}
	if err := volume.UnmountAll(dir, log); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
