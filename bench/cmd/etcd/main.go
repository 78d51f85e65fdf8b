// Command etcd is the etcd 3.7 server, built from the go.etcd.io/etcd/server/v3
// module pinned in this module's go.mod, so the benchmark compares Krabka
// with the etcd release it names without a separate download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
