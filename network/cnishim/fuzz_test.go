package cnishim

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// FuzzRun runs the plugin with any command, any configuration on stdin,
// and any answer from a stand-in nodelet (an HTTP server on a unix socket
// in a temporary folder): it exits 0 or 1, and what it prints is JSON.
// The configuration names the stand-in's socket unless the command is
// not one the plugin forwards, so that no fuzz input reaches another
// socket.
func FuzzRun(f *testing.F) {
	for _, seed := range []struct{ command, config, answer string }{
		{"ADD", `{"cniVersion":"1.0.0","name":"pods","type":"nodelet-cni"}`, `{"result":{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/24"}]}}`},
		{"DEL", `{"cniVersion":"1.0.0","name":"pods"}`, `{}`},
		{"CHECK", `{"cniVersion":"0.4.0"}`, `{"error":{"code":7,"msg":"eth0 is gone"}}`},
		{"ADD", `{}`, `{"result":""}`},
		{"ADD", `{}`, `not json`},
		{"VERSION", ``, ``},
		{"BOGUS", `{"socket":"/nowhere"}`, ``},
		{"GC", `[`, `{"error":null}`},
	} {
		f.Add(seed.command, seed.config, seed.answer)
	}
	socket := filepath.Join(f.TempDir(), "agent.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		f.Fatal(err)
	}
	var mu sync.Mutex
	var answer string
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write([]byte(answer))
	})}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	f.Cleanup(func() {
		server.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			f.Errorf("the stand-in nodelet stopped serving with %v", err)
		}
	})

	f.Fuzz(func(t *testing.T, command, config, nodeletAnswer string) {
		switch command {
		case "ADD", "DEL", "CHECK", "GC", "STATUS":
			var conf map[string]any
			if json.Unmarshal([]byte(config), &conf) != nil || conf == nil {
				break
			}
			conf["socket"] = socket
			data, err := json.Marshal(conf)
			if err != nil {
				t.Fatal(err)
			}
			config = string(data)
		}
		mu.Lock()
		answer = nodeletAnswer
		mu.Unlock()
		var stdout, stderr strings.Builder
		getenv := func(key string) string {
			if key == "CNI_COMMAND" {
				return command
			}
			return map[string]string{"CNI_CONTAINERID": "c1", "CNI_IFNAME": "eth0", "CNI_NETNS": "/proc/1/ns/net"}[key]
		}
		code := Run(getenv, strings.NewReader(config), &stdout, &stderr)
		if code != 0 && code != 1 {
			t.Errorf("Run() exit code %d", code)
		}
		if out := stdout.String(); out != "" && !json.Valid([]byte(out)) {
			t.Errorf("Run() printed %q, not JSON", out)
		}
		if code == 1 && stdout.Len() == 0 {
			t.Errorf("Run() failed without printing a CNI error")
		}
	})
}
