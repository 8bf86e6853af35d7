package main

// The iptables rules and chains the CNI plugins made for the pods of the
// chart's network, removed by clean-host: a pod that was not drained (a
// DaemonSet's, or any when the drain was skipped) dies with the runtime's
// pod, and no CNI DEL removes them. The plugins tag each rule they add
// with a comment naming the network and the container: the bridge
// plugin's ipMasq `name: "<network>" id: "<container>"` (in POSTROUTING,
// jumping to a chain of the pod's, whose rules carry it too), portmap's
// `dnat name: "<network>" id: "<container>"` (in CNI-HOSTPORT-DNAT,
// jumping to the pod's CNI-DN- chain). Only those rules, and the chains
// only they jump to, are the network's; the chains the plugins share with
// the host's own networks (CNI-HOSTPORT-*) and every other rule stay.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// iptablesTimeout bounds each iptables command.
const iptablesTimeout = time.Minute

// networkComment says whether comment is one a CNI plugin wrote for a
// pod of network. Pure.
func networkComment(comment, network string) bool {
	comment = strings.TrimPrefix(comment, "dnat ")
	return strings.HasPrefix(comment, fmt.Sprintf("name: %q id: ", network))
}

// iptablesRule is one `-A CHAIN ...` line of iptables-save.
type iptablesRule struct {
	chain, line, comment, target string
}

// parseRule reads an `-A CHAIN ...` line: its chain, comment and jump or
// goto target. Pure.
func parseRule(line string) iptablesRule {
	r := iptablesRule{line: line}
	words := saveWords(line)
	for i := 0; i+1 < len(words); i++ {
		switch words[i] {
		case "-A":
			r.chain = words[i+1]
		case "--comment":
			r.comment = words[i+1]
		case "-j", "-g":
			r.target = words[i+1]
		}
	}
	return r
}

// saveWords splits a line of iptables-save into its words, as
// iptables-restore reads them: a double-quoted word may hold spaces and
// backslash-escaped quotes. Pure.
func saveWords(line string) []string {
	var words []string
	var word strings.Builder
	inWord, quoted, escaped := false, false, false
	for _, c := range line {
		switch {
		case escaped:
			word.WriteRune(c)
			escaped = false
		case c == '\\' && quoted:
			escaped = true
		case c == '"':
			quoted = !quoted
			inWord = true
		case c == ' ' && !quoted:
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// networkRulesScript is the iptables-restore --noflush input that removes
// from the tables in save (iptables-save's output) the rules of network's
// pods and the user chains that only those rules jump to, and how many of
// each; empty when there are none. Pure.
func networkRulesScript(save, network string) (script string, rules, chains int) {
	var out strings.Builder
	var table string
	var tableRules []iptablesRule
	userChains := map[string]bool{}
	flush := func() {
		if table == "" {
			return
		}
		var deleted []string
		kept := map[string]bool{} // targets of a rule of another's
		for _, r := range tableRules {
			if !networkComment(r.comment, network) {
				kept[r.target] = true
			}
		}
		var gone []string
		for _, r := range tableRules {
			if !networkComment(r.comment, network) || !userChains[r.target] || kept[r.target] {
				continue
			}
			if !slices.Contains(gone, r.target) {
				gone = append(gone, r.target)
			}
		}
		for _, r := range tableRules {
			// A rule in a chain that goes is flushed with it.
			if networkComment(r.comment, network) && !slices.Contains(gone, r.chain) {
				deleted = append(deleted, "-D"+strings.TrimPrefix(r.line, "-A"))
			}
		}
		if len(deleted)+len(gone) > 0 {
			out.WriteString("*" + table + "\n")
			for _, line := range deleted {
				out.WriteString(line + "\n")
			}
			for _, chain := range gone {
				out.WriteString("-F " + chain + "\n")
			}
			for _, chain := range gone {
				out.WriteString("-X " + chain + "\n")
			}
			out.WriteString("COMMIT\n")
			rules += len(deleted)
			chains += len(gone)
		}
		table, tableRules = "", nil
		clear(userChains)
	}
	for _, line := range strings.Split(save, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "*"):
			flush()
			table = strings.TrimPrefix(line, "*")
		case strings.HasPrefix(line, ":"):
			// ":NAME POLICY [packets:bytes]": a user chain's policy is -.
			if fields := strings.Fields(strings.TrimPrefix(line, ":")); len(fields) >= 2 && fields[1] == "-" {
				userChains[fields[0]] = true
			}
		case strings.HasPrefix(line, "-A "):
			tableRules = append(tableRules, parseRule(line))
		case line == "COMMIT":
			flush()
		}
	}
	flush()
	return out.String(), rules, chains
}

// removeNetworkRules removes the rules and chains of network's pods from
// the iptables of the command's network namespace (the host's, for a pod
// on the host's network), with the image's iptables, the one the plugins
// used, and says how many went.
func removeNetworkRules(ctx context.Context, network string) (rules, chains int, err error) {
	ctx, cancel := context.WithTimeout(ctx, iptablesTimeout)
	defer cancel()
	save, err := exec.CommandContext(ctx, "iptables-save").Output()
	if err != nil {
		return 0, 0, fmt.Errorf("iptables-save: %w", commandError(err))
	}
	script, rules, chains := networkRulesScript(string(save), network)
	if script == "" {
		return 0, 0, nil
	}
	cmd := exec.CommandContext(ctx, "iptables-restore", "--noflush", "-w")
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("iptables-restore of the rules of network %s: %w: %s", network, err, strings.TrimSpace(stderr.String()))
	}
	return rules, chains, nil
}

// commandError adds what a failed command wrote on its standard error.
func commandError(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
	}
	return err
}
