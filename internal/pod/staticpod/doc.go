// Package staticpod reads the pods a node runs without the API server, as
// the kubelet's file and http config sources do: manifests in a folder
// (staticPodPath) and a URL serving a Pod or a PodList (staticPodURL).
//
// Decoding, defaulting and naming are pure functions (pod.go,
// defaults.go); the folder and the URL are read at the edges (file.go,
// http.go), and Sources keeps the current set and says what changed.
package staticpod
