package volume

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// mountInfo is one line of /proc/<pid>/mountinfo (proc(5)).
type mountInfo struct {
	ID       int
	ParentID int
	// Root is the folder of the source file system mounted here.
	Root       string
	MountPoint string
	FSType     string
	Source     string
	// Shared tells that the mount propagates mounts to and from its peer
	// group (optional field shared:N).
	Shared bool
	// SELinuxLabels tells that the file system keeps SELinux labels
	// ("seclabel" in its mount or super options), which the kubelet
	// requires before it has a CSI volume relabelled.
	SELinuxLabels bool
}

// parseMountInfo reads the mountinfo format:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2)(3)   (4)   (5)      (6)       (7)  (8) (9)   (10)         (11)
//
// Field 7 is zero or more optional fields ended by the "-" of field 8.
// Paths have space, tab, newline and backslash escaped as octal (\040).
func parseMountInfo(data []byte) ([]mountInfo, error) {
	var mounts []mountInfo
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		mount, err := parseMountInfoLine(line)
		if err != nil {
			return nil, fmt.Errorf("mountinfo line %d %q: %w", n, line, err)
		}
		mounts = append(mounts, mount)
	}
	return mounts, scanner.Err()
}

func parseMountInfoLine(line string) (mountInfo, error) {
	fields := strings.Fields(line)
	separator := -1
	for i := 6; i < len(fields); i++ {
		if fields[i] == "-" {
			separator = i
			break
		}
	}
	if separator < 0 || len(fields) < separator+3 {
		return mountInfo{}, fmt.Errorf("malformed line")
	}
	id, err := strconv.Atoi(fields[0])
	if err != nil {
		return mountInfo{}, fmt.Errorf("mount ID: %w", err)
	}
	parentID, err := strconv.Atoi(fields[1])
	if err != nil {
		return mountInfo{}, fmt.Errorf("parent ID: %w", err)
	}
	shared := false
	for _, optional := range fields[6:separator] {
		if strings.HasPrefix(optional, "shared:") {
			shared = true
		}
	}
	return mountInfo{
		ID:         id,
		ParentID:   parentID,
		Root:       unescapeOctal(fields[3]),
		MountPoint: unescapeOctal(fields[4]),
		FSType:     fields[separator+1],
		Source:     unescapeOctal(fields[separator+2]),
		Shared:     shared,
		SELinuxLabels: hasOption(fields[5], "seclabel") ||
			(len(fields) > separator+3 && hasOption(fields[separator+3], "seclabel")),
	}, nil
}

// hasOption tells whether a comma-separated option list holds option.
func hasOption(options, option string) bool {
	for o := range strings.SplitSeq(options, ",") {
		if o == option {
			return true
		}
	}
	return false
}

// unescapeOctal turns the kernel's \NNN escapes back into bytes.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// mountOf is the mount dir lies on: the one whose mount point is dir's
// nearest ancestor (or dir), and of mounts stacked there, the last one,
// which hides the others. ok is false when mounts hold none.
func mountOf(mounts []mountInfo, dir string) (mount mountInfo, ok bool) {
	for _, m := range mounts {
		if m.MountPoint != "/" && m.MountPoint != dir && !strings.HasPrefix(dir, m.MountPoint+"/") {
			continue
		}
		if !ok || len(m.MountPoint) >= len(mount.MountPoint) {
			mount, ok = m, true
		}
	}
	return mount, ok
}

// mountsUnder lists the mounts at dir or below it, in the order they must
// be unmounted: deepest first, and of mounts stacked at one place, the
// latest (highest ID) first.
func mountsUnder(mounts []mountInfo, dir string) []mountInfo {
	var under []mountInfo
	for _, mount := range mounts {
		if mount.MountPoint == dir || strings.HasPrefix(mount.MountPoint, dir+"/") {
			under = append(under, mount)
		}
	}
	sort.SliceStable(under, func(i, j int) bool {
		di, dj := strings.Count(under[i].MountPoint, "/"), strings.Count(under[j].MountPoint, "/")
		if di != dj {
			return di > dj
		}
		return under[i].ID > under[j].ID
	})
	return under
}
