package nodefault

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakePlugin is a stand-in for a real CNI plugin: it prints the command it
// was called for and the configuration it read on stdin.
const fakePlugin = "#!/bin/sh\necho \"real $CNI_COMMAND $(cat)\"\n"

// pluginFolder is a profile's folder of links: bridge links to a fake
// plugin outside it.
func pluginFolder(t *testing.T) (binDir, control, real string) {
	t.Helper()
	dir := t.TempDir()
	real = filepath.Join(dir, "real-bridge")
	if err := os.WriteFile(real, []byte(fakePlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	binDir = filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(binDir, "bridge")); err != nil {
		t.Fatal(err)
	}
	return binDir, filepath.Join(dir, "cni-fault"), real
}

// call runs the plugin as a runtime does: the command in CNI_COMMAND, the
// configuration on stdin.
func call(t *testing.T, plugin, command string) (string, error) {
	t.Helper()
	cmd := exec.Command(plugin)
	cmd.Env = append(os.Environ(), "CNI_COMMAND="+command)
	cmd.Stdin = strings.NewReader(`{"type":"bridge"}`)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

func TestCNIWrapperFailsTheCommandsNamedAndPassesTheRest(t *testing.T) {
	binDir, control, real := pluginFolder(t)
	w, err := WrapCNI(binDir, control, "bridge")
	if err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(binDir, "bridge")
	passes := func(command string) {
		t.Helper()
		out, err := call(t, plugin, command)
		if err != nil || out != `real `+command+` {"type":"bridge"}` {
			t.Errorf("%s: got %q, %v; want the real plugin's answer", command, out, err)
		}
	}
	fails := func(command, msg string) {
		t.Helper()
		out, err := call(t, plugin, command)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || out != `{"cniVersion":"0.4.0","code":999,"msg":"`+msg+`"}` {
			t.Errorf("%s: got %q, %v; want the CNI error %q and exit 1", command, out, err, msg)
		}
	}

	passes("ADD")
	if err := w.Set(CNIFault{Commands: []string{"ADD", "CHECK"}}); err != nil {
		t.Fatal(err)
	}
	fails("ADD", "chaos: fault injected into ADD after 0s")
	fails("CHECK", "chaos: fault injected into CHECK after 0s")
	passes("DEL")
	if err := w.Set(CNIFault{Commands: []string{"DEL"}, Hang: time.Second}); err != nil {
		t.Fatal(err)
	}
	fails("DEL", "chaos: fault injected into DEL after 1s")
	passes("ADD")
	if err := w.Clear(); err != nil {
		t.Fatal(err)
	}
	passes("DEL")

	if err := w.Restore(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(plugin); err != nil || got != real {
		t.Errorf("after Restore bridge links to %q (%v), want %q", got, err, real)
	}
	if _, err := os.Stat(control); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Restore the control file is there (%v)", err)
	}
}

func TestWrapCNIRefusesAPluginThatIsNotALink(t *testing.T) {
	// A folder of plugins themselves, as the shared one is: nothing is
	// written over.
	binDir := t.TempDir()
	plugin := filepath.Join(binDir, "bridge")
	if err := os.WriteFile(plugin, []byte(fakePlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := WrapCNI(binDir, filepath.Join(t.TempDir(), "cni-fault"), "bridge"); err == nil {
		t.Fatal("WrapCNI wrapped a plugin that is not a link")
	}
	if data, err := os.ReadFile(plugin); err != nil || string(data) != fakePlugin {
		t.Errorf("the plugin was changed: %q, %v", data, err)
	}
}

func TestCNIFaultString(t *testing.T) {
	for fault, want := range map[*CNIFault]string{
		{Commands: []string{"ADD"}}:                                "fail ADD",
		{Commands: []string{"ADD", "DEL"}, Hang: 12 * time.Second}: "hang 12s then fail ADD,DEL",
	} {
		if got := fault.String(); got != want {
			t.Errorf("%+v: got %q, want %q", *fault, got, want)
		}
	}
}
