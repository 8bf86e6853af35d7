package nodefault

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFillSize(t *testing.T) {
	tests := map[string]struct {
		available, leave, want int64
	}{
		"fills the difference":               {available: 3000, leave: 200, want: 2800},
		"nothing when less is available":     {available: 100, leave: 200, want: 0},
		"nothing when exactly that is there": {available: 200, leave: 200, want: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := FillSize(tc.available, tc.leave); got != tc.want {
				t.Errorf("FillSize(%d, %d) = %d, want %d", tc.available, tc.leave, got, tc.want)
			}
		})
	}
}

// TestFillAllocatesTheBlocks fills a file on the test's temporary folder
// (a real file system that supports fallocate) and reads back the blocks
// it takes.
func TestFillAllocatesTheBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fill")
	const size = 16 << 20
	if err := Fill(path, size); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size || st.Blocks*512 < size {
		t.Errorf("the file is %d bytes taking %d, want %d taking as much", st.Size, st.Blocks*512, size)
	}
	same, err := SameFileSystem(path, filepath.Dir(path))
	if err != nil || !same {
		t.Errorf("SameFileSystem(the file, its folder) = %v, %v", same, err)
	}
}
