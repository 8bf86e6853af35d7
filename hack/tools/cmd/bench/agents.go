package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// agent is one node agent under test with everything that is its own: its
// node, its API user, its containerd and where its processes' pidfiles are.
type agent struct {
	// Name is nodelet or kubelet; it is also the name of the agent's
	// pidfile in the stack's run folder.
	Name        string
	Node        string
	User        string
	CRIEndpoint string
	MetricsAddr string
	StateDir    string
	CgroupRoot  string
	// Log is the agent's log, where nodelet tells each start's steps;
	// empty for the kubelet, whose log does not.
	Log string
}

func (a *agent) pidFile() string           { return filepath.Join(a.StateDir, "run", a.Name+".pid") }
func (a *agent) containerdPIDFile() string { return filepath.Join(a.StateDir, "run", "containerd.pid") }

// stackEnv is what a profile's env file (hack/local-up.sh, hack/bench.sh)
// says of its stack.
type stackEnv map[string]string

func loadEnv(path string) (stackEnv, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the stack's env file: %w", err)
	}
	defer file.Close()
	env := stackEnv{}
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("env file %s: line %q is not VAR=value", path, line)
		}
		env[key] = value
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading env file %s: %w", path, err)
	}
	return env, nil
}

func (e stackEnv) get(key string) (string, error) {
	value, ok := e[key]
	if !ok || value == "" {
		return "", fmt.Errorf("the stack's env file has no %s", key)
	}
	return value, nil
}

// parseAgent reads NAME=ENVFILE into an agent.
func parseAgent(spec string) (*agent, stackEnv, error) {
	name, path, ok := strings.Cut(spec, "=")
	if !ok || (name != "nodelet" && name != "kubelet") {
		return nil, nil, fmt.Errorf("agent %q: want nodelet=ENVFILE or kubelet=ENVFILE", spec)
	}
	env, err := loadEnv(path)
	if err != nil {
		return nil, nil, err
	}
	a := &agent{Name: name}
	for key, field := range map[string]*string{
		"NODE_NAME":               &a.Node,
		"CRI_ENDPOINT":            &a.CRIEndpoint,
		"CONTAINERD_METRICS_ADDR": &a.MetricsAddr,
		"STATE_DIR":               &a.StateDir,
		"CGROUP_ROOT":             &a.CgroupRoot,
	} {
		if *field, err = env.get(key); err != nil {
			return nil, nil, fmt.Errorf("agent %s: %w", name, err)
		}
	}
	a.User = "system:node:" + a.Node
	if name == "nodelet" {
		a.Log = env["NODELET_LOG"]
	}
	return a, env, nil
}

// agentFlag collects repeated -agent flags.
type agentFlag []string

func (f *agentFlag) String() string     { return strings.Join(*f, ",") }
func (f *agentFlag) Set(v string) error { *f = append(*f, v); return nil }
