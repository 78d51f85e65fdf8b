package vfs_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"syscall"

	"github.com/krabka-go/krabka/internal/vfs"
)

// A file's data and its name are made durable separately: Sync for the
// data, SyncDir of the parent for the name.
func ExampleMemFS_Crash() {
	m := vfs.NewMem()
	_ = m.MkdirAll("/data", 0o755)
	_ = m.SyncDir("/")

	f, _ := m.OpenFile("/data/log", os.O_CREATE|os.O_RDWR, 0o644)
	_, _ = f.Write([]byte("batch1 "))
	_ = f.Sync()
	_ = m.SyncDir("/data")
	_, _ = f.Write([]byte("batch2 ")) // never synced

	m.Crash(rand.New(rand.NewPCG(1, 2)), vfs.CrashDropUnsynced)

	_, err := f.Write([]byte("x"))
	fmt.Println("old handle:", errors.Is(err, vfs.ErrCrashed))
	f, _ = m.OpenFile("/data/log", os.O_RDONLY, 0)
	b, _ := io.ReadAll(f)
	fmt.Printf("after crash: %q\n", b)
	// Output:
	// old handle: true
	// after crash: "batch1 "
}

// A failed Sync is final: the data it covered stays non-durable even when
// a retry succeeds.
func ExampleMemFS_InjectFault() {
	m := vfs.NewMem()
	f, _ := m.OpenFile("/state", os.O_CREATE|os.O_RDWR, 0o644)
	_ = m.SyncDir("/")
	_, _ = f.Write([]byte("vote"))

	m.InjectFault(vfs.Fault{Ops: vfs.OpSync, Err: syscall.EIO, Count: 1})
	fmt.Println("first sync:", f.Sync())
	fmt.Println("retry:", f.Sync())
	durable, _ := m.ReadDurable("/state")
	fmt.Printf("durable: %q\n", durable)
	// Output:
	// first sync: sync /state: input/output error
	// retry: <nil>
	// durable: ""
}
