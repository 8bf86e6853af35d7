package runtime

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Registry credentials from a pod's imagePullSecrets, matched to an image
// the way the kubelet's keyring matches them (and the docker client before
// it): a credential is keyed by a registry host, optionally with a path,
// where the host may hold globs ("*.example.com"); it serves the images
// whose host has as many dot-separated parts, each matching, the same port,
// and a path the key's path prefixes. More specific keys come first, and
// every credential that matches is tried in turn. Pure functions: the
// Secrets are read elsewhere.

// defaultRegistryKey is the key under which docker config files keep
// Docker Hub's credentials.
const defaultRegistryKey = "index.docker.io"

// registryCredential is one login of a docker config.
type registryCredential struct {
	Username string
	Password string
}

// dockerConfigEntry is one registry's entry in a docker config, with its
// "auth" field (base64 of user:password) decoded into the other two.
type dockerConfigEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

func (e dockerConfigEntry) credential() (registryCredential, error) {
	if e.Auth == "" {
		return registryCredential{Username: e.Username, Password: e.Password}, nil
	}
	// Padded or not, as docker config files come both ways.
	decoded, err := base64.StdEncoding.DecodeString(e.Auth)
	if err != nil {
		decoded, err = base64.RawStdEncoding.DecodeString(e.Auth)
	}
	if err != nil {
		return registryCredential{}, fmt.Errorf("decoding the auth field: %w", err)
	}
	user, password, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return registryCredential{}, fmt.Errorf("unable to parse auth field, must be formatted as base64(username:password)")
	}
	return registryCredential{Username: user, Password: password}, nil
}

// dockerConfig reads the registry entries of a pull secret: a
// kubernetes.io/dockerconfigjson secret's {"auths": {...}}, or a legacy
// kubernetes.io/dockercfg secret's bare map. Other secrets give nothing.
func dockerConfig(secret *corev1.Secret) (map[string]dockerConfigEntry, error) {
	switch {
	case secret.Type == corev1.SecretTypeDockerConfigJson && len(secret.Data[corev1.DockerConfigJsonKey]) > 0:
		var config struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := json.Unmarshal(secret.Data[corev1.DockerConfigJsonKey], &config); err != nil {
			return nil, err
		}
		return config.Auths, nil
	case secret.Type == corev1.SecretTypeDockercfg && len(secret.Data[corev1.DockerConfigKey]) > 0:
		var config map[string]dockerConfigEntry
		if err := json.Unmarshal(secret.Data[corev1.DockerConfigKey], &config); err != nil {
			return nil, err
		}
		return config, nil
	}
	return nil, nil
}

// keyedCredential is a credential under its normalised registry key.
type keyedCredential struct {
	key        string
	credential registryCredential
}

// credentialsFromSecrets lists the logins of the pull secrets under their
// normalised keys (host[/path]), in the secrets' order. Secrets and entries
// that cannot be read are returned as errors and left out: the pull then
// goes on with the others, or without a login.
func credentialsFromSecrets(secrets []corev1.Secret) ([]keyedCredential, []error) {
	var (
		creds []keyedCredential
		errs  []error
	)
	for i := range secrets {
		secret := &secrets[i]
		config, err := dockerConfig(secret)
		if err != nil {
			errs = append(errs, fmt.Errorf("pull secret %s: %w", secret.Name, err))
			continue
		}
		// Registries in a stable order; map order is none.
		for _, registry := range sortedKeys(config) {
			credential, err := config[registry].credential()
			if err != nil {
				errs = append(errs, fmt.Errorf("pull secret %s, registry %q: %w", secret.Name, registry, err))
				continue
			}
			key, err := registryKey(registry)
			if err != nil {
				errs = append(errs, fmt.Errorf("pull secret %s, registry %q: %w", secret.Name, registry, err))
				continue
			}
			creds = append(creds, keyedCredential{key: key, credential: credential})
		}
	}
	return creds, errs
}

// registryKey normalises a docker config's registry: no scheme, and no
// /v1/ or /v2/ API prefix on the path ("https://index.docker.io/v1/" is
// "index.docker.io").
func registryKey(registry string) (string, error) {
	value := registry
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	parsed, err := url.Parse(value)
	if err != nil {
		return "", err
	}
	path := parsed.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return parsed.Host, nil
	}
	return parsed.Host + path, nil
}

// pullCredentials are the logins to try, in order, for pulling image.
// None means pulling without one.
func pullCredentials(creds []keyedCredential, image string) []*runtimeapi.AuthConfig {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil
	}
	repository := named.Name()

	// More specific keys first: reverse lexical order puts
	// "quay.io/team" before "quay.io".
	keys := make([]string, 0, len(creds))
	for _, c := range creds {
		if !slices.Contains(keys, c.key) {
			keys = append(keys, c.key)
		}
	}
	slices.Sort(keys)
	slices.Reverse(keys)

	var auths []*runtimeapi.AuthConfig
	add := func(key string) {
		for _, c := range creds {
			if c.key == key {
				auths = append(auths, &runtimeapi.AuthConfig{Username: c.credential.Username, Password: c.credential.Password})
			}
		}
	}
	for _, key := range keys {
		if registryMatches(key, repository) {
			add(key)
		}
	}
	if len(auths) == 0 && isDockerHub(repository) {
		add(defaultRegistryKey)
	}
	return auths
}

// registryMatches reports whether a credential's key serves the repository
// (both host[:port][/path], without a scheme).
func registryMatches(key, repository string) bool {
	keyURL, err := url.Parse("https://" + key)
	if err != nil {
		return false
	}
	repoURL, err := url.Parse("https://" + repository)
	if err != nil {
		return false
	}
	keyParts, keyPort := splitHost(keyURL.Host)
	repoParts, repoPort := splitHost(repoURL.Host)
	if keyPort != repoPort || len(keyParts) != len(repoParts) || !strings.HasPrefix(repoURL.Path, keyURL.Path) {
		return false
	}
	for i := range keyParts {
		if matched, err := filepath.Match(keyParts[i], repoParts[i]); err != nil || !matched {
			return false
		}
	}
	return true
}

func splitHost(hostport string) (parts []string, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDockerHub reports whether a normalised repository lives on Docker Hub.
func isDockerHub(repository string) bool {
	host, _, _ := strings.Cut(repository, "/")
	return host == "docker.io" || host == defaultRegistryKey
}
