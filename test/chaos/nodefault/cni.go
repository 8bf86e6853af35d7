// Package nodefault injects the chaos run's faults of the node itself,
// around the runtime: its CNI plugins failing or hanging, and its file
// system filling up. Both act only on what belongs to the stack's
// profile: the profile's own folder of links to the CNI plugins (never
// the shared plugin folder), and the node's own file system.
package nodefault

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CNIFault is what the wrapped plugins do while it is set: for the CNI
// commands named, hang for Hang (none: fail at once) and then fail.
type CNIFault struct {
	Commands []string
	Hang     time.Duration
}

// controlLine is the fault as the wrapper script reads it: the seconds to
// hang, then the commands hit.
func (f CNIFault) controlLine() string {
	return strconv.Itoa(int(f.Hang.Round(time.Second).Seconds())) + " " + strings.Join(f.Commands, " ") + "\n"
}

func (f CNIFault) String() string {
	if f.Hang == 0 {
		return "fail " + strings.Join(f.Commands, ",")
	}
	return fmt.Sprintf("hang %s then fail %s", f.Hang.Round(time.Second), strings.Join(f.Commands, ","))
}

// WrapperScript is the plugin that stands in for real: while the control
// file names the command the runtime calls it for (CNI_COMMAND), it
// hangs and fails with a CNI error on its stdout; otherwise, and when
// the control file is absent, it is real (exec, so stdin, the network's
// configuration, goes to it unread). A hang ends in a failure rather
// than in the real plugin: a runtime that gave up on the call (its
// deadline, or a restart) must not find a network set up after it.
func WrapperScript(real, control string) string {
	return `#!/bin/sh
# The chaos run's wrapper of the CNI plugin ` + real + `: it fails or hangs
# while ` + control + ` names the command it is called for.
set -f
if [ -r ` + shellQuote(control) + ` ]; then
	set -- $(cat ` + shellQuote(control) + `)
	if [ $# -gt 1 ]; then
		hang=$1
		shift
		for command in "$@"; do
			if [ "$command" = "$CNI_COMMAND" ]; then
				[ "$hang" -gt 0 ] && sleep "$hang"
				printf '{"cniVersion":"0.4.0","code":999,"msg":"chaos: %s injected into %s after %ss"}\n' fault "$CNI_COMMAND" "$hang"
				exit 1
			fi
		done
	fi
fi
exec ` + shellQuote(real) + `
`
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CNIWrapper wraps plugins of a profile's CNI bin folder.
type CNIWrapper struct {
	binDir, control string
	// wrapped maps each wrapped plugin to the real one its link named.
	wrapped map[string]string
}

// WrapCNI replaces each plugin's link in binDir by the wrapper script,
// reading control. Each plugin must be a symbolic link: binDir is then
// the profile's own folder of links, and no shared plugin is written
// over. Restore puts the links back.
func WrapCNI(binDir, control string, plugins ...string) (*CNIWrapper, error) {
	w := &CNIWrapper{binDir: binDir, control: control, wrapped: map[string]string{}}
	for _, plugin := range plugins {
		path := filepath.Join(binDir, plugin)
		real, err := os.Readlink(path)
		if err != nil {
			return w, fmt.Errorf("CNI plugin %s is not a link of the profile's own plugin folder (so it is not wrapped): %w", path, err)
		}
		if err := replace(path, func(tmp string) error { return os.WriteFile(tmp, []byte(WrapperScript(real, control)), 0o755) }); err != nil {
			return w, fmt.Errorf("wrapping CNI plugin %s: %w", path, err)
		}
		w.wrapped[plugin] = real
	}
	return w, nil
}

// Set makes the wrapped plugins fail as f says, from their next call.
func (w *CNIWrapper) Set(f CNIFault) error {
	return replace(w.control, func(tmp string) error { return os.WriteFile(tmp, []byte(f.controlLine()), 0o644) })
}

// Clear makes them the real plugins again.
func (w *CNIWrapper) Clear() error {
	if err := os.Remove(w.control); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clearing the CNI fault: %w", err)
	}
	return nil
}

// Restore clears the fault and puts the plugins' links back.
func (w *CNIWrapper) Restore() error {
	errs := []error{w.Clear()}
	for plugin, real := range w.wrapped {
		path := filepath.Join(w.binDir, plugin)
		errs = append(errs, replace(path, func(tmp string) error { return os.Symlink(real, tmp) }))
	}
	return errors.Join(errs...)
}

// replace makes path anew through a temporary file renamed over it, so
// that a runtime calling the plugin meanwhile finds the old or the new
// one, never half of one.
func replace(path string, write func(tmp string) error) error {
	tmp := path + ".chaos-tmp"
	_ = os.Remove(tmp)
	if err := write(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
