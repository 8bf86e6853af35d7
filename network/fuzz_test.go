package network

import (
	"encoding/json"
	"net"
	"testing"

	"github.com/containernetworking/cni/pkg/types/create"
)

// FuzzResultIPs reads any bytes as a plugin's ADD result, as libcni's
// cache hands it back, and takes the sandbox's addresses from it: each is
// an IP address.
func FuzzResultIPs(f *testing.F) {
	for _, seed := range []string{
		`{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/run/netns/x"}],"ips":[{"address":"10.0.0.2/24","interface":0},{"address":"fd00::2/64"}]}`,
		`{"cniVersion":"0.4.0","interfaces":[{"name":"eth0"}],"ips":[{"version":"4","address":"10.0.0.2/24","interface":5}]}`,
		`{"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.0.0.2/24","interface":-1}]}`,
		`{"cniVersion":"1.1.0","ips":[{}]}`,
		`{"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24"}}`,
		`{}`,
	} {
		f.Add([]byte(seed), "eth0")
	}
	f.Fuzz(func(t *testing.T, data []byte, ifName string) {
		result, err := create.CreateFromBytes(data)
		if err != nil {
			return
		}
		for _, ip := range resultIPs(result, ifName) {
			if net.ParseIP(ip) == nil {
				t.Errorf("result %s gave address %q", data, ip)
			}
		}
	})
}

// FuzzParseConfig reads any bytes as a network configuration (a conflist
// or a single plugin's), as the agent reads the node's and its records'.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"bridge","bridge":"cni0"},{"type":"portmap","capabilities":{"portMappings":true}}]}`,
		`{"cniVersion":"0.4.0","name":"pods","type":"bridge"}`,
		`{"plugins":null}`,
		`{"plugins":[]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := parseConfig(data)
		if err != nil {
			return
		}
		if list == nil {
			t.Fatalf("parseConfig(%s) = nil, nil", data)
		}
		for _, p := range list.Plugins {
			if p == nil || p.Network == nil {
				t.Errorf("parseConfig(%s) has an empty plugin", data)
			}
		}
	})
}

// FuzzDecodeRecord reads any bytes as an attachment record left on disk
// by an earlier run, and goes on as loadRecords and a DEL do with it.
func FuzzDecodeRecord(f *testing.F) {
	for _, seed := range []string{
		`{"containerID":"c1","ifName":"eth0","netns":"/run/netns/x","args":[["K8S_POD_NAME","web"]],"capabilityArgs":{"portMappings":[]},"pod":{"namespace":"default","name":"web","uid":"u"},"created":"2026-01-01T00:00:00Z","config":{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"bridge"}]},"baselined":true,"unchecked":[1]}`,
		`{"containerID":""}`,
		`{"containerID":"c","config":null,"unchecked":[-1,99]}`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := decodeRecord(data)
		if err != nil {
			return
		}
		if rec.ContainerID == "" {
			t.Errorf("decodeRecord(%s) took a record without a container ID", data)
		}
		conf := rec.runtimeConf()
		if conf.ContainerID != rec.ContainerID || conf.IfName != rec.IfName {
			t.Errorf("runtimeConf() = %+v from record %+v", conf, rec)
		}
		if list, err := parseConfig(rec.Config); err == nil && list == nil {
			t.Errorf("the configuration of record %s parsed as nil", data)
		}
		if _, err := json.Marshal(rec); err != nil {
			t.Errorf("record %s read but cannot be written back: %v", data, err)
		}
	})
}
