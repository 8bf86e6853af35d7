package oomwatch

import (
	"strings"
	"testing"
)

const containerID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseKill(t *testing.T) {
	cases := []struct {
		name   string
		record string
		want   Kill
		ok     bool
	}{
		{
			name:   "a memory cgroup's OOM kill, as the kernel logs it",
			record: "6,179028,68926916193,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kubepods/burstable/pod1,task_memcg=/kubepods/burstable/pod1/" + containerID + ",task=tail,pid=5307,uid=0\n",
			want:   Kill{TaskCgroup: "/kubepods/burstable/pod1/" + containerID, Task: "tail", PID: 5307},
			ok:     true,
		},
		{
			name:   "the system's own OOM kill",
			record: "6,12,345,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,task=java,pid=42,uid=1000",
			want:   Kill{TaskCgroup: "/user.slice", Task: "java", PID: 42},
			ok:     true,
		},
		{
			name:   "the kill's other line",
			record: "3,179029,68926916204,-;Memory cgroup out of memory: Killed process 5307 (tail) total-vm:19076kB",
		},
		{
			name:   "a record's dictionary line",
			record: " SUBSYSTEM=memory",
		},
		{
			name:   "an OOM kill line without the victim's cgroup",
			record: "6,1,2,-;oom-kill:constraint=CONSTRAINT_NONE,task=x,pid=1",
		},
		{
			name:   "a PID that is no number",
			record: "6,1,2,-;oom-kill:task_memcg=/a,task=x,pid=one",
		},
		{
			name:   "no record prefix",
			record: "oom-kill:task_memcg=/a,task=x,pid=1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseKill(tc.record)
			if ok != tc.ok || got != tc.want {
				t.Errorf("ParseKill = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestContainerID(t *testing.T) {
	cases := map[string]string{
		"/kubepods/burstable/pod1/" + containerID: containerID,
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1_2.slice/cri-containerd-" + containerID + ".scope": containerID,
		"/kubepods.slice/crio-" + containerID + ".scope":                                                                    containerID,
		"/kubepods/burstable/pod1": "",
		"/user.slice":              "",
		"/":                        "",
		"/kubepods/pod1/" + containerID[:63] + "g":                "",
		"/kubepods/pod1/" + containerID + "0":                     "",
		"/kubepods/pod1/" + "0123456789ABCDEF" + containerID[16:]: "",
	}
	for path, want := range cases {
		if got := ContainerID(path); got != want {
			t.Errorf("ContainerID(%q) = %q, want %q", path, got, want)
		}
	}
}

// FuzzParseKill: the kernel's log is outside data; no record makes the
// parser panic, and a kill it reads names the cgroup it came with.
func FuzzParseKill(f *testing.F) {
	f.Add("6,179028,68926916193,-;oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/a,task_memcg=/kubepods/pod1/" + containerID + ",task=tail,pid=5307,uid=0\n")
	f.Add("3,1,2,-;Memory cgroup out of memory: Killed process 1 (x)")
	f.Add(" SUBSYSTEM=memory")
	f.Fuzz(func(t *testing.T, record string) {
		kill, ok := ParseKill(record)
		if !ok {
			return
		}
		if kill.TaskCgroup == "" || !strings.Contains(record, "task_memcg="+kill.TaskCgroup) {
			t.Errorf("ParseKill(%q) = %+v: a cgroup the record does not name", record, kill)
		}
		if id := ContainerID(kill.TaskCgroup); id != "" && !strings.HasSuffix(strings.TrimSuffix(kill.TaskCgroup, ".scope"), id) {
			t.Errorf("ContainerID(%q) = %q: not the path's end", kill.TaskCgroup, id)
		}
	})
}
