// Package oomwatch learns which containers the kernel's OOM killer killed
// from the kernel's own log (/dev/kmsg), as the kernel writes it before the
// victim dies.
//
// The runtime's report of an OOM kill can come late or not at all:
// containerd 1.6 may publish its TaskOOM after the task's exit (its issue
// 8180) or lose it (issue 8893), and under the systemd cgroup driver a
// container's scope is gone before the runtime reads its OOM event. The
// kernel's "oom-kill:" line names the killed task's memory cgroup, whose
// last element carries the container's ID under either driver, so nodelet
// can say OOMKilled where the runtime says Error (137).
package oomwatch

import (
	"strconv"
	"strings"
)

// Kill is one OOM kill as the kernel logged it.
type Kill struct {
	// TaskCgroup is the killed task's memory cgroup, from the root of the
	// memory hierarchy ("/kubepods/burstable/pod<uid>/<container id>").
	TaskCgroup string
	// Task is the killed process's command name, PID its ID.
	Task string
	PID  int
}

// ParseKill reads the kernel's one-line summary of an OOM kill (kernels
// since 4.19) from a /dev/kmsg record:
//
//	6,179028,68926916193,-;oom-kill:constraint=CONSTRAINT_MEMCG,...,task_memcg=/kubepods/pod1/abc,task=tail,pid=5307,uid=0
//
// ok is false for any other record.
func ParseKill(record string) (Kill, bool) {
	// The record's prefix (priority, sequence, time, flags) ends at the
	// first ';'; the message runs to the end of the line.
	_, message, found := strings.Cut(record, ";")
	if !found {
		return Kill{}, false
	}
	message, _, _ = strings.Cut(message, "\n")
	fields, found := strings.CutPrefix(message, "oom-kill:")
	if !found {
		return Kill{}, false
	}
	var kill Kill
	// The cgroup paths may hold commas only in theory; the fields the
	// kernel prints before and after them never do, so each is read by
	// its key.
	for _, field := range strings.Split(fields, ",") {
		key, value, _ := strings.Cut(field, "=")
		switch key {
		case "task_memcg":
			kill.TaskCgroup = value
		case "task":
			kill.Task = value
		case "pid":
			pid, err := strconv.Atoi(value)
			if err != nil {
				return Kill{}, false
			}
			kill.PID = pid
		}
	}
	if kill.TaskCgroup == "" {
		return Kill{}, false
	}
	return kill, true
}

// ContainerID is the ID of the container whose cgroup path is given, or ""
// when its last element names none: "<id>" (cgroupfs driver),
// "cri-containerd-<id>.scope", "crio-<id>.scope" (systemd driver). Runtimes
// name containers by 64 hex digits.
func ContainerID(cgroupPath string) string {
	last := cgroupPath[strings.LastIndex(cgroupPath, "/")+1:]
	last = strings.TrimSuffix(last, ".scope")
	if i := strings.LastIndex(last, "-"); i >= 0 {
		last = last[i+1:]
	}
	if len(last) != 64 {
		return ""
	}
	for _, c := range last {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	return last
}
