package network

// CHECKs: the baseline each attachment gets once added, and the periodic
// CHECKs of every ready sandbox's attachments.

import (
	"context"
	"fmt"
	"slices"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	"k8s.io/klog/v2"
)

// baseline CHECKs each plugin of a newly added attachment on its own and
// records those whose CHECK fails on the network just made.
func (a *Agent) baseline(ctx context.Context, key attachmentKey) {
	ctx, cancel := context.WithTimeout(ctx, pluginTimeout)
	defer cancel()
	unlock, err := a.lock(ctx, key.containerID)
	if err != nil {
		return
	}
	defer unlock()
	att, ok := a.get(key)
	if !ok || !att.added || att.record.Baselined {
		return
	}
	rec := att.record
	list, err := parseConfig(rec.Config)
	if err != nil {
		return
	}
	rec.Baselined, rec.Unchecked = true, nil
	for i, plugin := range list.Plugins {
		if err := a.checkPlugin(ctx, list, plugin, rec.runtimeConf()); err != nil {
			rec.Unchecked = append(rec.Unchecked, i)
			a.opts.Log.V(1).Info("Left a plugin out of this attachment's CHECKs: its CHECK fails on the network just added",
				"containerID", key.containerID, "plugin", plugin.Network.Type, "err", err.Error())
		}
	}
	if err := a.writeRecord(key, rec); err != nil {
		a.opts.Log.Error(err, "Failed to record which plugins can CHECK an attachment", "containerID", key.containerID)
	}
	a.mu.Lock()
	if att, ok := a.attachments[key]; ok {
		att.record = rec
	}
	a.mu.Unlock()
}

// checkPlugin CHECKs one plugin of the list, with the list's cached result.
func (a *Agent) checkPlugin(ctx context.Context, list *libcni.NetworkConfigList, plugin *libcni.PluginConfig, rt *libcni.RuntimeConf) error {
	one := &libcni.NetworkConfigList{Name: list.Name, CNIVersion: list.CNIVersion, Plugins: []*libcni.PluginConfig{plugin}, Bytes: list.Bytes}
	if err := a.cni.CheckNetworkList(ctx, one, rt); err != nil {
		return fmt.Errorf("plugin %s failed (check): %w", plugin.Network.Type, err)
	}
	return nil
}

// check runs CHECK on one attachment with the configuration and result it
// was added with.
func (a *Agent) check(ctx context.Context, key attachmentKey) error {
	att, ok := a.get(key)
	if !ok || !att.added {
		return types.NewError(types.ErrUnknownContainer, fmt.Sprintf("nodelet has no attachment of container %s on %s", key.containerID, key.ifName), "")
	}
	list, err := parseConfig(att.record.Config)
	if err != nil {
		return err
	}
	for i, plugin := range list.Plugins {
		if slices.Contains(att.record.Unchecked, i) {
			continue
		}
		if err := a.checkPlugin(ctx, list, plugin, att.record.runtimeConf()); err != nil {
			return err
		}
	}
	return nil
}

// checkAll CHECKs the attachment of every ready sandbox; a broken one has
// its IPs withdrawn and its pod told, so that the sandbox is recreated.
func (a *Agent) checkAll(ctx context.Context) {
	sandboxes, ok := a.sandboxes(ctx)
	if !ok {
		return
	}
	for _, key := range a.snapshot() {
		if sandboxes[key.containerID] != SandboxReady {
			continue
		}
		unlock, ok := a.tryLock(key.containerID)
		if !ok {
			continue
		}
		att, ok := a.get(key)
		if !ok || !att.added || att.broken || !att.record.Baselined {
			unlock()
			continue
		}
		checkCtx, cancel := context.WithTimeout(ctx, pluginTimeout)
		err := a.check(checkCtx, key)
		cancel()
		if err != nil && a.stillReady(ctx, key.containerID) {
			a.mu.Lock()
			if att, ok := a.attachments[key]; ok {
				att.broken = true
			}
			a.mu.Unlock()
			a.opts.Log.Info("Found a pod network broken; its sandbox will be recreated",
				"pod", klog.KRef(att.record.Pod.Namespace, att.record.Pod.Name), "containerID", key.containerID, "err", err.Error())
			unlock()
			a.opts.OnBroken(att.record.Pod)
			continue
		}
		unlock()
	}
}

// stillReady tells whether a sandbox is still ready, so that a CHECK that
// failed while the sandbox was being stopped is not taken for a broken
// network.
func (a *Agent) stillReady(ctx context.Context, sandboxID string) bool {
	sandboxes, ok := a.sandboxes(ctx)
	return ok && sandboxes[sandboxID] == SandboxReady
}
