package staticpod

import (
	"context"
	"fmt"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// Fetch reads the static pods served at url, one Pod or a PodList, with
// header on the request, for nodeName, as the kubelet's http source. An
// error (unreachable, not 200, not decodable) leaves the caller with the
// last set it read.
func Fetch(ctx context.Context, client *http.Client, url string, header http.Header, nodeName string) ([]*corev1.Pod, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching static pods from %s: %w", url, err)
	}
	req.Header = header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching static pods: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxConfigLength+1))
	if err != nil {
		return nil, fmt.Errorf("fetching static pods from %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching static pods from %s: %v: %s", url, resp.Status, data)
	}
	if len(data) == 0 {
		// An empty answer is no pods, as the kubelet reads it.
		return nil, nil
	}
	return Decode(data, Source{Kind: podutil.HTTPSource, Name: url}, nodeName, true)
}
