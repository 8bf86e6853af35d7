// etcd built from its Go module: Debian's etcd 3.4 is too old for the
// watch-progress requests kube-apiserver 1.36 makes.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
