package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// nodeIdentities writes one kubeconfig per node into dir, NAME.kubeconfig,
// each with a client certificate of system:node:NAME in group
// system:nodes signed by the stack's CA: the identity the Node authorizer
// and NodeRestriction confine, as a real node's. server is the URL the
// nodes reach the API server at.
func nodeIdentities(pkiDir, dir, server string, names []string) error {
	caCertPEM, err := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	if err != nil {
		return fmt.Errorf("reading the stack's CA: %w", err)
	}
	caCert, err := parseCertPEM(caCertPEM)
	if err != nil {
		return err
	}
	caKey, err := readPrivateKey(filepath.Join(pkiDir, "ca.key"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for i, name := range names {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		template := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano() + int64(i)),
			Subject:      pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
			NotBefore:    time.Now().Add(-time.Minute),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, template, caCert, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("signing the certificate of node %s: %w", name, err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		user := "system:node:" + name
		config := clientcmdapi.NewConfig()
		config.Clusters["scale"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caCertPEM}
		config.AuthInfos[user] = &clientcmdapi.AuthInfo{
			ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		}
		config.Contexts["scale"] = &clientcmdapi.Context{Cluster: "scale", AuthInfo: user}
		config.CurrentContext = "scale"
		if err := clientcmd.WriteToFile(*config, filepath.Join(dir, name+".kubeconfig")); err != nil {
			return err
		}
	}
	return nil
}

func parseCertPEM(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM certificate in the CA file")
	}
	return x509.ParseCertificate(block.Bytes)
}

// readPrivateKey reads a PEM key in PKCS#8 or PKCS#1 (openssl genrsa
// writes either, by version).
func readPrivateKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the stack's CA key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("no PEM key in %s", path)
	}
	if key, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if signer, ok := key.(crypto.Signer); ok {
			return signer, nil
		}
	}
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return key, nil
}

// countingProxy forwards TCP connections to the API server unchanged (TLS
// stays end to end, so the API server still sees each node's
// certificate) and counts the bytes each way: the nodes' traffic, apart
// from the control plane's own.
type countingProxy struct {
	listener net.Listener
	target   string
	// received is what the API server sent the nodes; sent, the other way.
	received, sent atomic.Int64
	wg             sync.WaitGroup
}

func startCountingProxy(target string) (*countingProxy, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{listener: listener, target: target}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *countingProxy) addr() string { return p.listener.Addr().String() }

func (p *countingProxy) serve() {
	defer p.wg.Done()
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return
		}
		go p.forward(conn)
	}
}

func (p *countingProxy) forward(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	done := make(chan struct{}, 2)
	go func() {
		copyCounting(server, client, &p.sent)
		_ = server.(*net.TCPConn).CloseWrite()
		done <- struct{}{}
	}()
	go func() {
		copyCounting(client, server, &p.received)
		_ = client.(*net.TCPConn).CloseWrite()
		done <- struct{}{}
	}()
	<-done
	<-done
}

// copyCounting copies as io.Copy does, adding each chunk to count as it
// goes: a watch stays open for the whole run, and its bytes must show in
// the window they arrived in.
func copyCounting(dst io.Writer, src io.Reader, count *atomic.Int64) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			count.Add(int64(n))
		}
		if err != nil {
			return
		}
	}
}

func (p *countingProxy) close() { _ = p.listener.Close() }

// agentProcs are the processes running the hollow nodes.
type agentProcs struct {
	cmds []*exec.Cmd
	// leftovers are glob patterns of what the processes leave behind
	// wherever they like; before is what matched them before the first
	// started, which stop leaves alone.
	leftovers []string
	before    map[string]bool
}

// leaveNothing has stop remove what comes to match patterns while the
// processes run (kubemark's hollow kubelet puts its root folder and its
// fake runtime's socket in /tmp, whatever TMPDIR says).
func (a *agentProcs) leaveNothing(patterns ...string) error {
	a.before = map[string]bool{}
	for _, pattern := range patterns {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			return err
		}
		for _, m := range matches {
			a.before[m] = true
		}
	}
	a.leftovers = patterns
	return nil
}

// start runs a command in a session of its own, logging to logFile.
func (a *agentProcs) start(logFile string, env []string, name string, args ...string) error {
	out, err := os.Create(logFile)
	if err != nil {
		return err
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	out.Close()
	a.cmds = append(a.cmds, cmd)
	return nil
}

func (a *agentProcs) pids() []int {
	pids := make([]int, 0, len(a.cmds))
	for _, cmd := range a.cmds {
		pids = append(pids, cmd.Process.Pid)
	}
	return pids
}

// alive fails when one of the processes has exited.
func (a *agentProcs) alive() error {
	for _, pid := range a.pids() {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return fmt.Errorf("agent process %d is gone", pid)
		}
		if end := lastParen(data); end > 0 && end+2 < len(data) && data[end+2] == 'Z' {
			return fmt.Errorf("agent process %d exited", pid)
		}
	}
	return nil
}

func lastParen(data []byte) int {
	for i := len(data) - 1; i >= 0; i-- {
		if data[i] == ')' {
			return i
		}
	}
	return -1
}

// stop sends SIGTERM to every process, waits up to grace, then kills the
// rest.
func (a *agentProcs) stop(grace time.Duration) {
	for _, cmd := range a.cmds {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var wg sync.WaitGroup
	for _, cmd := range a.cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				_ = cmd.Process.Kill()
				<-done
			}
		}()
	}
	wg.Wait()
	for _, pattern := range a.leftovers {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if !a.before[m] {
				_ = os.RemoveAll(m)
			}
		}
	}
}

// cpuOf sums the CPU seconds of pids.
func cpuOf(pids []int) (float64, error) {
	var total float64
	for _, pid := range pids {
		cpu, err := cpuSeconds(pid)
		if err != nil {
			return 0, err
		}
		total += cpu
	}
	return total, nil
}

// rssOf sums the resident memory (VmRSS) of pids, in bytes.
func rssOf(pids []int) (uint64, error) {
	var total uint64
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0, err
		}
		rss, err := statusField(data, "VmRSS:")
		if err != nil {
			return 0, fmt.Errorf("process %d: %w", pid, err)
		}
		total += rss
	}
	return total, nil
}

func statusField(status []byte, name string) (uint64, error) {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			return parseKB(rest)
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", name)
}
