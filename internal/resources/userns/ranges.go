// Package userns gives each pod that asks for a user namespace of its own
// (spec.hostUsers: false) a range of host user and group IDs, as the
// kubelet does: IDsPerPod IDs out of the node's range, never the host's
// first IDsPerPod (root among them), the same range for users and groups,
// mapped from ID 0 in the pod. A pod keeps its range for its life, across
// nodelet restarts: it is written in the pod's folder and read back at
// start.
//
// ranges.go and allocator.go decide, over plain values; manager.go reads
// and writes the files.
package userns

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// IDsPerPod is how many IDs a pod's user namespace maps: the kubelet's
// default (its userNamespaces.idsPerPod), 65536 so that every 16-bit ID an
// image may use exists in the pod.
const IDsPerPod uint32 = 65536

// User is the user whose subordinate ID ranges (/etc/subuid, /etc/subgid)
// are the node's range for pods, the kubelet's.
const User = "kubelet"

// Range is a range of host IDs: Length IDs from First.
type Range struct {
	First  uint32
	Length uint32
}

// DefaultRange is the node's range when User has none: every ID but the
// first IDsPerPod, as under the kubelet.
var DefaultRange = Range{First: IDsPerPod, Length: uint32((1 << 32) - uint64(IDsPerPod))}

// NodeRange is the node's range for pods, given the contents of
// /etc/subuid and /etc/subgid (nil when a file is missing): User's one
// range, the same in both, or DefaultRange when neither names User. It is
// then checked as the kubelet checks it, against maxPods pods.
func NodeRange(subuid, subgid []byte, maxPods int) (Range, error) {
	uids, err := subIDRanges(subuid, User)
	if err != nil {
		return Range{}, fmt.Errorf("kubelet mappings: %w", err)
	}
	gids, err := subIDRanges(subgid, User)
	if err != nil {
		return Range{}, fmt.Errorf("kubelet mappings: %w", err)
	}
	r := DefaultRange
	switch {
	case len(uids) == 0 && len(gids) == 0:
	case !slices.Equal(uids, gids):
		return Range{}, fmt.Errorf("kubelet mappings: mismatched subuids and subgids for user %q", User)
	case len(uids) != 1:
		return Range{}, fmt.Errorf("kubelet mappings: user %q must have only one range, has %d", User, len(uids))
	default:
		r = uids[0]
	}
	return r, checkNodeRange(r, maxPods)
}

// checkNodeRange holds the kubelet's rules for the node's range, in its
// words: whole pods' ranges, none of them holding the host's root, and room
// for maxPods pods.
func checkNodeRange(r Range, maxPods int) error {
	switch {
	case r.First%IDsPerPod != 0:
		return fmt.Errorf("kubelet user assigned ID %v is not a multiple of %v", r.First, IDsPerPod)
	case r.First < IDsPerPod:
		return fmt.Errorf("kubelet user assigned ID %v must be greater or equal to %v", r.First, IDsPerPod)
	case r.Length%IDsPerPod != 0:
		return fmt.Errorf("kubelet user assigned IDs length %v is not a multiple of %v", r.Length, IDsPerPod)
	case uint64(r.Length/IDsPerPod) < uint64(maxPods):
		return fmt.Errorf("kubelet user assigned IDs are not enough to support %v pods", maxPods)
	}
	return nil
}

// subIDRanges are the ranges a subuid or subgid file (lines of
// NAME:FIRST:COUNT) gives user.
func subIDRanges(data []byte, user string) ([]Range, error) {
	var ranges []Range
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, ":")
		if len(fields) != 3 || fields[0] != user {
			continue
		}
		first, err := strconv.ParseUint(fields[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("error parsing line %q: %w", line, err)
		}
		count, err := strconv.ParseUint(fields[2], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("error parsing line %q: %w", line, err)
		}
		ranges = append(ranges, Range{First: uint32(first), Length: uint32(count)})
	}
	return ranges, scanner.Err()
}
