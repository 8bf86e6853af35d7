package userns

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestAllocatorGivesDisjointRangesAndTakesThemBack(t *testing.T) {
	a := NewAllocator(Range{First: 65536, Length: 3 * 65536})
	first, err := a.Allocate("a")
	if err != nil || first != (Range{First: 65536, Length: 65536}) {
		t.Fatalf("Allocate(a) = %+v, %v, want the first slot", first, err)
	}
	if again, _ := a.Allocate("a"); again != first {
		t.Errorf("Allocate(a) again = %+v, want the range it holds %+v", again, first)
	}
	second, _ := a.Allocate("b")
	third, _ := a.Allocate("c")
	if second.First != 2*65536 || third.First != 3*65536 {
		t.Errorf("Allocate(b), Allocate(c) = %+v, %+v, want the next slots", second, third)
	}
	if _, err := a.Allocate("d"); err == nil || err.Error() != "could not find an empty slot to allocate a user namespace" {
		t.Errorf("Allocate(d) on a full range: error = %v, want the kubelet's", err)
	}
	a.Release("b")
	if got, err := a.Allocate("d"); err != nil || got != second {
		t.Errorf("Allocate(d) after b's release = %+v, %v, want b's old range %+v", got, err, second)
	}
	if _, ok := a.Lookup("b"); ok {
		t.Error("Lookup(b) after its release found a range")
	}
}

func TestAllocatorRecord(t *testing.T) {
	nodeRange := Range{First: 65536, Length: 4 * 65536}
	tests := map[string]struct {
		held    map[types.UID]Range
		pod     types.UID
		r       Range
		wantErr string
	}{
		"a free slot":                     {pod: "a", r: Range{First: 2 * 65536, Length: 65536}},
		"the slot the pod holds":          {held: map[types.UID]Range{"a": {First: 65536, Length: 65536}}, pod: "a", r: Range{First: 65536, Length: 65536}},
		"another slot than the pod holds": {held: map[types.UID]Range{"a": {First: 65536, Length: 65536}}, pod: "a", r: Range{First: 2 * 65536, Length: 65536}, wantErr: `different user namespace range already used by pod "a"`},
		"another pod's slot":              {held: map[types.UID]Range{"b": {First: 65536, Length: 65536}}, pod: "a", r: Range{First: 65536, Length: 65536}, wantErr: `range picked for pod "a" already taken`},
		"a wrong length":                  {pod: "a", r: Range{First: 65536, Length: 1000}, wantErr: "wrong user namespace length 1000"},
		"a first ID off a slot":           {pod: "a", r: Range{First: 65537, Length: 65536}, wantErr: "wrong user namespace offset specified 65537"},
		"outside the node's range":        {pod: "a", r: Range{First: 0, Length: 65536}, wantErr: "id 0 is out of range"},
		"past the node's range":           {pod: "a", r: Range{First: 5 * 65536, Length: 65536}, wantErr: "id 327680 is out of range"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := NewAllocator(nodeRange)
			for pod, r := range tc.held {
				if err := a.Record(pod, r); err != nil {
					t.Fatal(err)
				}
			}
			err := a.Record(tc.pod, tc.r)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Record() error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Record() error = %v", err)
			}
			if got, ok := a.Lookup(tc.pod); !ok || got != tc.r {
				t.Errorf("Lookup() = %+v, %v, want %+v", got, ok, tc.r)
			}
		})
	}
}

func TestMappingsFileRoundTripsAndRefusesWhatWasNotWritten(t *testing.T) {
	r := Range{First: 3 * 65536, Length: 65536}
	data, err := encodeMappings(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeMappings(data); err != nil || got != r {
		t.Errorf("decodeMappings(encodeMappings(r)) = %+v, %v, want %+v", got, err, r)
	}
	for name, file := range map[string]string{
		"not JSON":         "{",
		"no mapping":       `{"uidMappings":[],"gidMappings":[]}`,
		"different groups": `{"uidMappings":[{"hostId":196608,"containerId":0,"length":65536}],"gidMappings":[{"hostId":262144,"containerId":0,"length":65536}]}`,
		"root not mapped":  `{"uidMappings":[{"hostId":196608,"containerId":1,"length":65536}],"gidMappings":[{"hostId":196608,"containerId":1,"length":65536}]}`,
	} {
		if _, err := decodeMappings([]byte(file)); err == nil {
			t.Errorf("decodeMappings(%s) accepted it", name)
		}
	}
}
