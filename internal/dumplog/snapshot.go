package dumplog

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"

	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// DumpSnapshot prints the snapshot or bootstrap.checkpoint at path as
// "krabka dump-snapshot" shows it: what the file is, its header (the last
// contained log timestamp, kraft.version and the voter set), the record
// and batch counts, and every metadata record as a payload in the JSON
// form of [AppendPayload]:
//
//	Dumping 00000000000000007206-0000000001.checkpoint
//	Snapshot end offset: 7206, epoch: 1
//	LastContainedLogTimestamp: 1760259000000
//	KRaftVersion: 1
//	Voters: {"version":0,"voters":[...]}
//	Records: 68 in 3 batches
//	| offset: 1 CreateTime: 1760259000000 payload: {"type":"FEATURE_LEVEL_RECORD",...}
//
// Unlike [Dump], it verifies the whole file first (snapshot.Open): a
// damaged snapshot prints nothing and fails with an error naming the byte
// position and the reason.
func DumpSnapshot(w io.Writer, fsys vfs.FS, path string) error {
	_, line, err := Describe(path)
	if err != nil {
		return err
	}
	if filepath.Ext(path) != ".checkpoint" {
		return fmt.Errorf("%s: not a snapshot: dump-snapshot reads <offset>-<epoch>.checkpoint and bootstrap.checkpoint files", path)
	}
	r, err := snapshot.Open(fsys, path, snapshot.ReadOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	bw := bufio.NewWriter(w)
	h := r.Header()
	fmt.Fprintf(bw, "Dumping %s\n%s\n", path, line)
	fmt.Fprintf(bw, "LastContainedLogTimestamp: %d\n", h.LastContainedLogTimestamp)
	fmt.Fprintf(bw, "KRaftVersion: %d\n", h.KRaftVersion)
	if h.Voters == nil {
		fmt.Fprintln(bw, "Voters: none")
	} else {
		b, err := AppendControlJSON([]byte("Voters: "), h.Voters)
		if err != nil {
			return fmt.Errorf("%s: voters: %w", path, err)
		}
		bw.Write(append(b, '\n'))
	}
	fmt.Fprintf(bw, "Records: %d in %d batches\n", r.Records(), r.Batches())
	var l []byte
	for r.Next() {
		b := r.Batch()
		for i := range b.Records {
			rec := &b.Records[i]
			offset := b.RecordOffset(rec)
			l = fmt.Appendf(l[:0], "| offset: %d %s: %d payload: ", offset, b.TimestampType(), b.RecordTimestamp(rec))
			m, err := metadata.Decode(rec.Value)
			if err == nil {
				l, err = AppendPayload(l, m)
			}
			if err != nil {
				return fmt.Errorf("%s: record at offset %d (batch at byte %d): %w", path, offset, r.Pos(), err)
			}
			bw.Write(append(l, '\n'))
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("dumplog: write: %w", err)
	}
	return nil
}
