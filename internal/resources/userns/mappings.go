package userns

import (
	"encoding/json"
	"errors"
	"fmt"
)

// mappingsFile is the file in the pod's folder that holds its range, the
// kubelet's name and format, so that either agent reads the other's.
const mappingsFile = "userns"

type fileMappings struct {
	UIDMappings []fileMapping `json:"uidMappings"`
	GIDMappings []fileMapping `json:"gidMappings"`
}

type fileMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

// encodeMappings is the mappings file of a pod holding r: r for both users
// and groups, from ID 0.
func encodeMappings(r Range) ([]byte, error) {
	m := fileMapping{HostID: r.First, ContainerID: 0, Length: r.Length}
	return json.Marshal(fileMappings{UIDMappings: []fileMapping{m}, GIDMappings: []fileMapping{m}})
}

// decodeMappings reads a mappings file back, accepting only what
// encodeMappings writes, as the kubelet does.
func decodeMappings(data []byte) (Range, error) {
	var f fileMappings
	if err := json.Unmarshal(data, &f); err != nil {
		return Range{}, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	switch {
	case len(f.UIDMappings) != 1:
		return Range{}, errors.New("invalid user namespace configuration: no more than one mapping allowed")
	case len(f.GIDMappings) != 1 || f.UIDMappings[0] != f.GIDMappings[0]:
		return Range{}, errors.New("invalid user namespace configuration: GID and UID mappings should be identical")
	case f.UIDMappings[0].ContainerID != 0:
		// Runtimes assume the pod's root is mapped.
		return Range{}, errors.New("invalid user namespace configuration: UID 0 must be mapped")
	}
	return Range{First: f.UIDMappings[0].HostID, Length: f.UIDMappings[0].Length}, nil
}
