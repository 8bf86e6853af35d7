package options

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
)

// dropinSuffix is the suffix of the files in --config-dir that are read,
// the kubelet's.
const dropinSuffix = ".conf"

// readConfigFiles reads the --config file and the drop-ins of --config-dir
// as the kubelet does: the drop-ins in lexical order (the folder walked
// into), each merged over what the files before it set as a JSON merge
// patch (RFC 7386: an object's fields merged, any other value, lists
// included, replaced). Each file is a NodeletConfiguration or the
// kubelet's KubeletConfiguration, read as the fields of
// NodeletConfiguration it sets. kubelet is whether the kubelet's defaults
// apply: the --config file is the kubelet's (or, without one, the first
// drop-in is). The result is not defaulted.
func readConfigFiles(config, configDir string) (c *configv1alpha1.NodeletConfiguration, kubelet bool, err error) {
	var paths []string
	if config != "" {
		paths = append(paths, config)
	}
	if configDir != "" {
		dropins, err := dropinFiles(configDir)
		if err != nil {
			return nil, false, err
		}
		paths = append(paths, dropins...)
	}
	merged := map[string]any{}
	for i, path := range paths {
		fields, isKubelet, err := readConfigFile(path)
		if err != nil {
			return nil, false, err
		}
		if i == 0 {
			kubelet = isKubelet
		}
		mergePatch(merged, fields)
	}
	merged["apiVersion"] = configv1alpha1.SchemeGroupVersion.String()
	merged["kind"] = configv1alpha1.Kind
	js, err := json.Marshal(merged)
	if err != nil {
		return nil, false, err
	}
	c, err = configv1alpha1.Decode(js)
	if err != nil {
		return nil, false, fmt.Errorf("config files %v: %w", paths, err)
	}
	return c, kubelet, nil
}

// dropinFiles are the drop-ins of a folder, in the order they are read.
func dropinFiles(dir string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(d.Name()) == dropinSuffix {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading --config-dir: %w", err)
	}
	return paths, nil
}

// readConfigFile reads one configuration file, strictly, as the fields of
// NodeletConfiguration it sets, and says whether it is the kubelet's.
func readConfigFile(path string) (fields map[string]any, kubelet bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("reading config file: %w", err)
	}
	fields, kubelet, err = decodeConfigFile(data)
	if err != nil {
		return nil, false, fmt.Errorf("config file %s: %w", path, err)
	}
	return fields, kubelet, nil
}

// decodeConfigFile decodes a NodeletConfiguration or a KubeletConfiguration
// by its apiVersion and kind.
func decodeConfigFile(data []byte) (fields map[string]any, kubelet bool, err error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		// Decode says why, on one line.
		_, err = configv1alpha1.Decode(data)
		return nil, false, err
	}
	var meta metav1.TypeMeta
	if err := json.Unmarshal(js, &meta); err != nil {
		return nil, false, fmt.Errorf("not a configuration object: %w", err)
	}
	if meta.APIVersion == kubeletAPIVersion && meta.Kind == kubeletKind {
		fields, err := decodeKubeletConfig(js)
		return fields, true, err
	}
	if _, err := configv1alpha1.Decode(js); err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(js, &fields); err != nil {
		return nil, false, err
	}
	delete(fields, "apiVersion")
	delete(fields, "kind")
	return fields, false, nil
}

// mergePatch merges patch into doc as a JSON merge patch (RFC 7386), as
// the kubelet merges its drop-ins: objects field by field, a null removes
// a field, any other value replaces.
func mergePatch(doc, patch map[string]any) {
	for k, v := range patch {
		switch v := v.(type) {
		case nil:
			delete(doc, k)
		case map[string]any:
			sub, ok := doc[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
			}
			mergePatch(sub, v)
			doc[k] = sub
		default:
			doc[k] = v
		}
	}
}
