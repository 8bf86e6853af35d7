// Package imagegc is the node's image garbage collector, the kubelet's
// image manager (pkg/kubelet/images, its image GC policy). The policy
// (policy.go) is pure: when the image file system's usage is at or above
// its high threshold, the images no container uses (running or not) and
// that are neither pinned nor the runtime's sandbox image go, least
// recently used first, down to the low threshold, sparing those detected
// less than the minimum age ago; with a maximum age, images unused for
// longer go whatever the usage. The Manager (a manager.Runnable) applies
// it every five minutes through CRI, keeping first-detected and last-used
// times in memory as the kubelet does. Dead containers are collected by
// package runtime (gc.go).
package imagegc
