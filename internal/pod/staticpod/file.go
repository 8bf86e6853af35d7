package staticpod

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// ReadPath reads the static pods of path, a folder of manifests or one
// manifest file, for nodeName, as the kubelet's file source: in a folder,
// files whose name starts with a dot and sub-folders are skipped, every
// other file holds one Pod. A file that does not decode is in errs, and
// the other pods are returned. A path that does not exist holds no pods.
func ReadPath(path, nodeName string) (pods []*corev1.Pod, errs []error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, []error{fmt.Errorf("reading static pod path: %w", err)}
	case !info.IsDir():
		pod, err := readFile(path, nodeName)
		if err != nil {
			return nil, []error{err}
		}
		return []*corev1.Pod{pod}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, []error{fmt.Errorf("reading static pod folder: %w", err)}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, entry := range entries {
		if strings.HasPrefix(entry.Name(), ".") {
			continue
		}
		file := filepath.Join(path, entry.Name())
		info, err := os.Stat(file) // follows links, as the kubelet does
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		pod, err := readFile(file, nodeName)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pods = append(pods, pod)
	}
	return pods, errs
}

func readFile(file, nodeName string) (*corev1.Pod, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading static pod manifest: %w", err)
	}
	pods, err := Decode(data, Source{Kind: podutil.FileSource, Name: file}, nodeName, false)
	if err != nil {
		return nil, err
	}
	return pods[0], nil
}
