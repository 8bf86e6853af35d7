package volume

import (
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Tables of the fsGroup decisions (ownership.go): plain values, no files.

func TestVolumeOwnership(t *testing.T) {
	fsGroup := &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
	onRootMismatch := &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000), FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch)}
	source := func(s corev1.VolumeSource) *corev1.Volume { return &corev1.Volume{Name: "v", VolumeSource: s} }
	tests := map[string]struct {
		psc  *corev1.PodSecurityContext
		vol  *corev1.Volume
		want *ownership
	}{
		"no security context: nothing": {
			vol: source(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
		},
		"no fsGroup: nothing": {
			psc: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
			vol: source(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
		},
		"an emptyDir is group writable, walked unless its root matches (once, as the kubelet)": {
			psc:  fsGroup,
			vol:  source(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
			want: &ownership{fsGroup: 2000, onRootMismatch: true},
		},
		"an emptyDir of medium Memory too": {
			psc:  fsGroup,
			vol:  source(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}),
			want: &ownership{fsGroup: 2000, onRootMismatch: true},
		},
		"a secret is group readable and walked after every write": {
			psc:  fsGroup,
			vol:  source(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}),
			want: &ownership{fsGroup: 2000, readOnly: true},
		},
		"OnRootMismatch does not spare a volume written from the API (the kubelet passes no policy)": {
			psc:  onRootMismatch,
			vol:  source(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}),
			want: &ownership{fsGroup: 2000, readOnly: true},
		},
		"downwardAPI": {
			psc:  fsGroup,
			vol:  source(corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}),
			want: &ownership{fsGroup: 2000, readOnly: true},
		},
		"projected": {
			psc:  fsGroup,
			vol:  source(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}),
			want: &ownership{fsGroup: 2000, readOnly: true},
		},
		"hostPath: the node's files are never changed": {
			psc: fsGroup,
			vol: source(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := volumeOwnership(tc.psc, tc.vol)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(ownership{})); diff != "" {
				t.Errorf("volumeOwnership (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClaimOwnership(t *testing.T) {
	fsGroup := &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
	always := &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000), FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeAlways)}
	onRootMismatch := &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000), FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch)}
	tests := map[string]struct {
		psc               *corev1.PodSecurityContext
		readOnly, ownable bool
		want              *ownership
	}{
		"no fsGroup: nothing": {ownable: true},
		"a writable local volume, no policy: walked each mount": {psc: fsGroup, ownable: true, want: &ownership{fsGroup: 2000}},
		"Always: walked each mount":                             {psc: always, ownable: true, want: &ownership{fsGroup: 2000}},
		"OnRootMismatch: walked when the root differs":          {psc: onRootMismatch, ownable: true, want: &ownership{fsGroup: 2000, onRootMismatch: true}},
		"read-only: nothing, as the kubelet's local volumes":    {psc: fsGroup, readOnly: true, ownable: true},
		"not ownable (hostPath): nothing":                       {psc: fsGroup},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := claimOwnership(tc.psc, tc.readOnly, tc.ownable)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(ownership{})); diff != "" {
				t.Errorf("claimOwnership (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOwnedMode(t *testing.T) {
	tests := map[string]struct {
		mode     fs.FileMode
		readOnly bool
		want     fs.FileMode
	}{
		"a private file becomes group read-write":           {mode: 0o600, want: 0o660},
		"bits are added, never removed":                     {mode: 0o604, want: 0o664},
		"read-only: group read only":                        {mode: 0o400, readOnly: true, want: 0o440},
		"read-only keeps the write bits it had":             {mode: 0o644, readOnly: true, want: 0o644},
		"an executable keeps its bits":                      {mode: 0o700, want: 0o760},
		"a folder gets group search and setgid":             {mode: fs.ModeDir | 0o755, want: fs.ModeDir | fs.ModeSetgid | 0o775},
		"an emptyDir's root":                                {mode: fs.ModeDir | 0o777, want: fs.ModeDir | fs.ModeSetgid | 0o777},
		"a read-only folder":                                {mode: fs.ModeDir | 0o700, readOnly: true, want: fs.ModeDir | fs.ModeSetgid | 0o750},
		"a tmpfs root keeps its sticky bit":                 {mode: fs.ModeDir | fs.ModeSticky | 0o777, want: fs.ModeDir | fs.ModeSticky | fs.ModeSetgid | 0o777},
		"a link is left alone (a chmod changes its target)": {mode: fs.ModeSymlink | 0o777, want: fs.ModeSymlink | 0o777},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ownedMode(tc.mode, tc.readOnly); got != tc.want {
				t.Errorf("ownedMode(%v, %v) = %v, want %v", tc.mode, tc.readOnly, got, tc.want)
			}
		})
	}
}

func TestRootMatches(t *testing.T) {
	rw := ownership{fsGroup: 2000, onRootMismatch: true}
	ro := ownership{fsGroup: 2000, readOnly: true, onRootMismatch: true}
	tests := map[string]struct {
		gid  int64
		mode fs.FileMode
		o    ownership
		want bool
	}{
		"group, bits and setgid: matches":         {gid: 2000, mode: fs.ModeDir | fs.ModeSetgid | 0o770, o: rw, want: true},
		"more bits than needed: matches":          {gid: 2000, mode: fs.ModeDir | fs.ModeSetgid | 0o777, o: rw, want: true},
		"another group":                           {gid: 0, mode: fs.ModeDir | fs.ModeSetgid | 0o777, o: rw},
		"no setgid":                               {gid: 2000, mode: fs.ModeDir | 0o777, o: rw},
		"no group write":                          {gid: 2000, mode: fs.ModeDir | fs.ModeSetgid | 0o750, o: rw},
		"no group write, read-only: matches":      {gid: 2000, mode: fs.ModeDir | fs.ModeSetgid | 0o750, o: ro, want: true},
		"no group search":                         {gid: 2000, mode: fs.ModeDir | fs.ModeSetgid | 0o760, o: rw},
		"no owner search":                         {gid: 2000, mode: fs.ModeDir | fs.ModeSetgid | 0o670, o: rw},
		"a root that is a file never matches":     {gid: 2000, mode: 0o770 | fs.ModeSetgid, o: rw},
		"sticky and setgid, as a tmpfs root ends": {gid: 2000, mode: fs.ModeDir | fs.ModeSticky | fs.ModeSetgid | 0o777, o: rw, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := rootMatches(tc.gid, tc.mode, tc.o); got != tc.want {
				t.Errorf("rootMatches(%d, %v) = %v, want %v", tc.gid, tc.mode, got, tc.want)
			}
		})
	}
}

func TestFsUser(t *testing.T) {
	user := func(uid int64) *corev1.SecurityContext { return &corev1.SecurityContext{RunAsUser: ptr.To(uid)} }
	tests := map[string]struct {
		psc        *corev1.PodSecurityContext
		containers []*corev1.SecurityContext
		init       []*corev1.SecurityContext
		want       *int64
	}{
		"nobody says: none":                         {containers: []*corev1.SecurityContext{nil}},
		"the pod's user":                            {psc: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}, containers: []*corev1.SecurityContext{nil, {}}, want: ptr.To[int64](1000)},
		"every container's own, the same":           {containers: []*corev1.SecurityContext{user(1000), user(1000)}, want: ptr.To[int64](1000)},
		"a container overrides the pod's, the same": {psc: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}, containers: []*corev1.SecurityContext{user(1000)}, want: ptr.To[int64](1000)},
		"two users: none":                           {containers: []*corev1.SecurityContext{user(1000), user(1001)}},
		"one container does not say: none":          {containers: []*corev1.SecurityContext{user(1000), nil}},
		"an init container counts":                  {containers: []*corev1.SecurityContext{user(1000)}, init: []*corev1.SecurityContext{user(0)}},
		"an init container of the same user":        {containers: []*corev1.SecurityContext{user(1000)}, init: []*corev1.SecurityContext{user(1000)}, want: ptr.To[int64](1000)},
		"root is a user like another":               {psc: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}, containers: []*corev1.SecurityContext{nil}, want: ptr.To[int64](0)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: tc.psc}}
			for _, sc := range tc.containers {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "c", SecurityContext: sc})
			}
			for _, sc := range tc.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: "i", SecurityContext: sc})
			}
			if diff := cmp.Diff(tc.want, fsUser(pod)); diff != "" {
				t.Errorf("fsUser (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTokenMode(t *testing.T) {
	if got := tokenMode(0o644, nil, nil); got != 0o644 {
		t.Errorf("no user, no fsGroup: mode %o, want the default 0644", got)
	}
	if got := tokenMode(0o644, ptr.To[int64](1000), nil); got != 0o600 {
		t.Errorf("an owner: mode %o, want 0600", got)
	}
	if got := tokenMode(0o644, nil, ptr.To[int64](2000)); got != 0o600 {
		t.Errorf("an fsGroup: mode %o, want 0600 (the walk adds group read)", got)
	}
}

func TestOwnedPayload(t *testing.T) {
	payload := map[string]fileProjection{
		"password": {Data: []byte("x"), Mode: 0o400},
		"token":    {Data: []byte("t"), Mode: 0o600, FsUser: ptr.To[int64](1000)},
		"config":   {Data: []byte("c"), Mode: 0o644},
	}
	want := map[string]fileProjection{
		"password": {Data: []byte("x"), Mode: 0o440},
		"token":    {Data: []byte("t"), Mode: 0o640, FsUser: ptr.To[int64](1000)},
		"config":   {Data: []byte("c"), Mode: 0o644},
	}
	if diff := cmp.Diff(want, ownedPayload(payload, true)); diff != "" {
		t.Errorf("ownedPayload (-want +got):\n%s", diff)
	}
	if payload["password"].Mode != 0o400 {
		t.Errorf("the payload given was changed")
	}
}
