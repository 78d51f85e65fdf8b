package logstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/vfs"
)

// tmpSuffix is appended to a file name while it is being rewritten, as
// Kafka does for quorum-state.tmp and its checkpoint files.
const tmpSuffix = ".tmp"

// writeFileAtomic replaces path with data so that after a crash the file
// holds either its old or its new content, never a mix: it writes
// path+".tmp", fsyncs it, renames it over path and fsyncs the directory.
// The temporary file is removed when a step fails.
func writeFileAtomic(fsys vfs.FS, path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("logstore: create %s: %w", tmp, err)
	}
	fail := func(step string, err error) error {
		_ = f.Close()
		_ = fsys.Remove(tmp)
		return fmt.Errorf("logstore: %s %s: %w", step, tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail("write", err)
	}
	// Z19 writes without barriers: no fsync before the rename, none of
	// the directory after it.
	if !bugzoo.Active(bugzoo.Z19) {
		if err := f.Sync(); err != nil {
			return fail("sync", err)
		}
	}
	if err := f.Close(); err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("logstore: close %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("logstore: rename %s: %w", tmp, err)
	}
	dir := filepath.Dir(path)
	if bugzoo.Active(bugzoo.Z19) {
		return nil
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("logstore: sync directory %s: %w", dir, err)
	}
	return nil
}

// readSmallFile reads a whole file of at most limit bytes. Files written by
// Kafka that we read whole (quorum-state, meta.properties,
// leader-epoch-checkpoint, partition.metadata) are small; the limit bounds
// the allocation when the file is damaged or hostile.
func readSmallFile(fsys vfs.FS, path string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("logstore: read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("logstore: read %s: larger than %d bytes", path, limit)
	}
	return data, nil
}

// isNotExist reports whether err says a file is missing.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
