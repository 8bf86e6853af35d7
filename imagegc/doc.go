// Package imagegc will hold the node's image garbage collector, the
// kubelet's image manager (pkg/kubelet/images, its image GC policy): when
// the image file system's usage crosses its high threshold, it removes the
// images no container uses, least recently used first, down to the low
// threshold, sparing the pinned ones and those younger than the minimum
// age. Dead containers are collected by package runtime (gc.go). Nothing
// lives here yet.
package imagegc
