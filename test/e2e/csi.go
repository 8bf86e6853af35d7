package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The CSI node plugin the CSI tests run, as host processes against the
// stack's root dir: test/csi/mockplugin (the csi-test module's gRPC
// harness, which logs every call, around a node service that bind-mounts
// each volume's folder) and test/csi/registrar (the plugin-registration
// socket in <root-dir>/plugins_registry).

// mockDriver is the plugin's driver name.
const mockDriver = "mock.csi.nodelet.dev"

var (
	csiBuildOnce sync.Once
	csiBinDir    string
	csiBuildErr  error
)

// buildCSIPlugin builds the plugin and the registrar once per run.
func (f *Framework) buildCSIPlugin(t *testing.T) string {
	t.Helper()
	csiBuildOnce.Do(func() {
		root, err := repoRoot()
		if err != nil {
			csiBuildErr = err
			return
		}
		csiBinDir = filepath.Join(f.Env.StateDir, "csi-bin")
		for _, build := range []struct{ dir, pkg, out string }{
			{filepath.Join(root, "test/csi/mockplugin"), ".", "mockplugin"},
			{root, "./test/csi/registrar", "registrar"},
		} {
			cmd := goBuild(build.dir, "-o", filepath.Join(csiBinDir, build.out), build.pkg)
			if out, err := cmd.CombinedOutput(); err != nil {
				csiBuildErr = fmt.Errorf("building %s: %w\n%s", build.out, err, out)
				return
			}
		}
	})
	if csiBuildErr != nil {
		t.Fatal(csiBuildErr)
	}
	return csiBinDir
}

// csiPluginTurn lets one test at a time run the plugin: every test's
// plugin has the same driver name, socket and node ID. It lets the CSI
// tests that do not kill nodelet run beside the parallel tests, one
// after the other.
var csiPluginTurn sync.Mutex

// csiPlugin is a running plugin and registrar.
type csiPlugin struct {
	// dataDir holds each volume's files, by handle; hooksDir the
	// fail-<Method> files; log is the plugin's call log.
	dataDir, hooksDir, log string
	nodeID                 string
	// process is the plugin's.
	process *hostProcess
}

// startCSIPlugin runs the plugin and its registrar until the test ends,
// with the driver's CSIDriver object (attachRequired: false,
// podInfoOnMount: true, then mutate's changes).
func (f *Framework) startCSIPlugin(t *testing.T, mutate func(*storagev1.CSIDriverSpec)) *csiPlugin {
	t.Helper()
	// Registered first, so released last: after the plugin is stopped
	// and deregistered.
	csiPluginTurn.Lock()
	t.Cleanup(csiPluginTurn.Unlock)
	bin := f.buildCSIPlugin(t)
	dir := filepath.Join(f.Env.StateDir, "csi-"+namespacePrefix(t.Name()))
	p := &csiPlugin{
		dataDir:  filepath.Join(dir, "data"),
		hooksDir: filepath.Join(dir, "hooks"),
		log:      filepath.Join(dir, "plugin.log"),
		nodeID:   f.Env.NodeName + "-mock",
	}
	// Where a plugin's socket usually is, as the kubelet's host path
	// for plugins.
	endpoint := filepath.Join(f.Env.NodeletRootDir, "plugins", mockDriver, "csi.sock")
	for _, d := range []string{p.dataDir, p.hooksDir, filepath.Dir(endpoint)} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	p.process = f.runProcess(t, p.log, filepath.Join(bin, "mockplugin"), "-v=3", "-endpoint", endpoint, "-node-id", p.nodeID, "-data-dir", p.dataDir, "-hooks-dir", p.hooksDir)
	// Cleanups run last first: this one after the registrar has stopped
	// and removed its socket. The next test's plugin has the same driver
	// name and node ID, so without it that test could take this one's
	// registration, not yet undone, for its own.
	t.Cleanup(func() { f.waitForCSIDriverDeregistered(t) })
	f.runProcess(t, filepath.Join(dir, "registrar.log"), filepath.Join(bin, "registrar"),
		"-registration-dir", filepath.Join(f.Env.NodeletRootDir, "plugins_registry"), "-driver-name", mockDriver, "-endpoint", endpoint)

	driver := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: mockDriver},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true)},
	}
	if mutate != nil {
		mutate(&driver.Spec)
	}
	drivers := f.Client.StorageV1().CSIDrivers()
	_ = drivers.Delete(t.Context(), mockDriver, metav1.DeleteOptions{})
	if _, err := drivers.Create(t.Context(), driver, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drivers.Delete(context.Background(), mockDriver, metav1.DeleteOptions{}) })
	return p
}

// waitForCSIDriverDeregistered waits for nodelet to take the mock driver
// out of the Node's annotation and the CSINode, as it does when the
// registrar's socket goes.
func (f *Framework) waitForCSIDriverDeregistered(t *testing.T) {
	t.Helper()
	err := await.Poll(context.Background(), time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		node, err := f.Client.CoreV1().Nodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if strings.Contains(node.Annotations["csi.volume.kubernetes.io/nodeid"], mockDriver) {
			return false, nil
		}
		csiNode, err := f.Client.StorageV1().CSINodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(csiNode.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == mockDriver }), nil
	}))
	if err != nil {
		t.Errorf("waiting for nodelet to deregister CSI driver %s once its registrar stopped: %v", mockDriver, err)
	}
}

// hostProcess is a host process a test runs, its output appended to a
// log file.
type hostProcess struct {
	logPath, bin string
	args         []string
	cmd          *exec.Cmd
	done         chan struct{}
}

// runProcess runs a host process, its output in logPath, until the test
// ends; it is stopped with SIGTERM (a registrar then removes its socket).
func (f *Framework) runProcess(t *testing.T, logPath, bin string, args ...string) *hostProcess {
	t.Helper()
	if err := os.Remove(logPath); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	p := &hostProcess{logPath: logPath, bin: bin, args: args}
	p.start(t)
	t.Cleanup(func() { p.stop(os.Interrupt) })
	return p
}

func (p *hostProcess) start(t *testing.T) {
	t.Helper()
	out, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		out.Close()
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		out.Close()
		close(p.done)
	}()
}

// stop signals the process and waits for it, killing it after 10 s.
func (p *hostProcess) stop(sig os.Signal) {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// restart kills the process (SIGKILL, as a crash) and starts it again.
func (p *hostProcess) restart(t *testing.T) {
	t.Helper()
	p.stop(os.Kill)
	p.start(t)
}

// setHook makes the plugin fail method while on.
func (p *csiPlugin) setHook(t *testing.T, method string, on bool) {
	t.Helper()
	path := filepath.Join(p.hooksDir, "fail-"+method)
	var err error
	if on {
		err = os.WriteFile(path, nil, 0o600)
	} else {
		err = os.Remove(path)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// csiCall is one call in the plugin's log.
type csiCall struct {
	// Method is the short name: NodeStageVolume.
	Method string
	OK     bool
	// Error is why it failed.
	Error string
	// Context is the request's volume context.
	Context map[string]string
	// StagingPath and TargetPath are the request's paths; Capability its
	// volume capability as logged.
	StagingPath, TargetPath, Capability string
}

// calls reads the plugin's calls for the volume handle, in order.
func (p *csiPlugin) calls(t *testing.T, handle string) []csiCall {
	t.Helper()
	data, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	var calls []csiCall
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		_, entry, ok := strings.Cut(scanner.Text(), "gRPCCall: ")
		if !ok {
			continue
		}
		var call struct {
			Method  string
			Request struct {
				VolumeID      string            `json:"volume_id"`
				VolumeContext map[string]string `json:"volume_context"`
				StagingPath   string            `json:"staging_target_path"`
				TargetPath    string            `json:"target_path"`
				Capability    json.RawMessage   `json:"volume_capability"`
			}
			Error string
		}
		if err := json.Unmarshal([]byte(entry), &call); err != nil {
			t.Fatalf("call log line %q: %v", entry, err)
		}
		// The volume's stats are asked for at any time: not part of
		// its life's order.
		if call.Request.VolumeID != handle || strings.HasSuffix(call.Method, "/NodeGetVolumeStats") {
			continue
		}
		calls = append(calls, csiCall{
			Method: call.Method[strings.LastIndexByte(call.Method, '/')+1:], OK: call.Error == "", Error: call.Error, Context: call.Request.VolumeContext,
			StagingPath: call.Request.StagingPath, TargetPath: call.Request.TargetPath, Capability: string(call.Request.Capability),
		})
	}
	return calls
}

// okCalls are the methods of the calls that succeeded, a call repeated
// in a row counted once (retries of an idempotent call).
func okCalls(calls []csiCall) []string {
	var out []string
	for _, c := range calls {
		if c.OK && (len(out) == 0 || out[len(out)-1] != c.Method) {
			out = append(out, c.Method)
		}
	}
	return out
}

// waitForCall waits until the plugin has answered method for the handle
// (ok: with success, else with an error).
func (p *csiPlugin) waitForCall(t *testing.T, handle, method string, ok bool, timeout time.Duration) {
	t.Helper()
	await.Eventually(t, timeout, fmt.Sprintf("the plugin to answer %s (success %t)", method, ok), await.Condition(func(context.Context) (bool, error) {
		for _, c := range p.calls(t, handle) {
			if c.Method == method && c.OK == ok {
				return true, nil
			}
		}
		return false, nil
	}))
}

// csiClaim makes a static PersistentVolume of the driver for handle, and
// a claim bound to it by name.
func (f *Framework) csiClaim(t *testing.T, ns, handle string) string {
	t.Helper()
	return f.csiClaimOfMode(t, ns, handle, corev1.PersistentVolumeFilesystem)
}

// csiClaimOfMode is csiClaim with the volume and claim of volumeMode mode.
func (f *Framework) csiClaimOfMode(t *testing.T, ns, handle string, mode corev1.PersistentVolumeMode) string {
	t.Helper()
	pvName := ns + "-" + handle
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			VolumeMode:                    &mode,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: mockDriver, VolumeHandle: handle, VolumeAttributes: map[string]string{"test": t.Name()},
			}},
		},
	}
	if _, err := f.Client.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			VolumeMode:       &mode,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""),
			VolumeName:       pvName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pvName
}

// csiPod is a pod that writes 10 MiB and its name into the claim and
// reads its name back.
func csiPod(ns, name string) *corev1.Pod {
	pod := newPod(ns, name).withGracePeriod(1).withShell(`head -c 10485760 /dev/zero > /data/blob && hostname > /data/owner && echo "WROTE $(cat /data/owner)"; exec sleep 3600`).obj()
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
	}}}
	return pod
}
