package main

import (
	"bufio"
	"os"
	"runtime"
	"strings"
)

// describeMachine says what the bench runs on, from /proc and os-release.
func describeMachine() Machine {
	// runtime.NumCPU counts only the CPUs this process may run on, which
	// the bench confines to the control plane's when the node has its own.
	m := Machine{CPUs: countLines("/proc/cpuinfo", "processor", ":")}
	if m.CPUs == 0 {
		m.CPUs = runtime.NumCPU()
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	m.CPUModel = firstValue("/proc/cpuinfo", "model name", ":")
	if total := firstValue("/proc/meminfo", "MemTotal", ":"); total != "" {
		m.MemoryBytes, _ = parseKB(total)
	}
	m.OS = strings.Trim(firstValue("/etc/os-release", "PRETTY_NAME", "="), `"`)
	return m
}

// firstValue returns the value of the first "KEY<sep>value" line of a file.
func firstValue(path, key, sep string) string {
	if values := valuesOf(path, key, sep); len(values) > 0 {
		return values[0]
	}
	return ""
}

// countLines counts a file's "KEY<sep>value" lines.
func countLines(path, key, sep string) int { return len(valuesOf(path, key, sep)) }

// valuesOf returns the values of a file's "KEY<sep>value" lines.
func valuesOf(path, key, sep string) []string {
	file, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer file.Close()
	var values []string
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		name, value, ok := strings.Cut(scanner.Text(), sep)
		if ok && strings.TrimSpace(name) == key {
			values = append(values, strings.TrimSpace(value))
		}
	}
	return values
}
