package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// serviceAccountTokens is the volume context key a driver with
// tokenRequests gets its pod's tokens under: JSON, audience ->
// {token, expirationTimestamp}.
const serviceAccountTokens = "csi.storage.k8s.io/serviceAccount.tokens"

// checkTokens reads the tokens NodePublishVolume got, as a driver that
// uses them would, refuses them malformed, and logs their audiences.
func checkTokens(volumeID string, volumeContext map[string]string) error {
	value, ok := volumeContext[serviceAccountTokens]
	if !ok {
		return nil
	}
	var tokens map[string]struct {
		Token               string    `json:"token"`
		ExpirationTimestamp time.Time `json:"expirationTimestamp"`
	}
	if err := json.Unmarshal([]byte(value), &tokens); err != nil {
		return fmt.Errorf("%s: %w", serviceAccountTokens, err)
	}
	audiences := make([]string, 0, len(tokens))
	for audience, t := range tokens {
		if t.Token == "" || t.ExpirationTimestamp.IsZero() {
			return fmt.Errorf("%s: the token for audience %q has no token or expiration", serviceAccountTokens, audience)
		}
		audiences = append(audiences, audience)
	}
	slices.Sort(audiences)
	klog.InfoS("Got service account tokens", "volume", volumeID, "audiences", strings.Join(audiences, ","))
	return nil
}
