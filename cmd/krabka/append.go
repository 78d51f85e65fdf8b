package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/krabka-go/krabka/internal/dumplog"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// maxAppendLine bounds one line of an append --file.
const maxAppendLine = 1 << 20

// newAppendCommand builds "krabka metadata-quorum append".
func newAppendCommand(a *app, o *quorumOptions) *cobra.Command {
	var jsons []string
	var file string
	cmd := &cobra.Command{
		Use:   "append (--json RECORD ... | --file FILE)",
		Short: "Commit metadata records given in dump-log's JSON form",
		Long: "append commits metadata records, written as dump-log\n" +
			"--cluster-metadata-decoder prints their payload\n" +
			"({\"type\":\"TOPIC_RECORD\",\"version\":0,\"data\":{...}}), in one SubmitChange:\n" +
			"they are committed together or not at all. Each --json is one record;\n" +
			"--file reads one record per line (blank lines are skipped; \"-\" is stdin).\n" +
			"The leader replays the records against its image first and refuses\n" +
			"the whole change when it rejects one, with its reason. On success it\n" +
			"prints the offset of the first record and the epoch of the batch.\n" +
			"This is a tool for tests and break-glass repairs: the records bypass\n" +
			"every check but replay's.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAppend(cmd.Context(), a, cmd.InOrStdin(), *o, jsons, file)
		},
	}
	cmd.Flags().StringArrayVar(&jsons, "json", nil, "a record in dump-log's JSON form (repeatable)")
	cmd.Flags().StringVar(&file, "file", "", "a file with one record in dump-log's JSON form per line, or - for stdin")
	return cmd
}

// runAppend is "krabka metadata-quorum append".
func runAppend(ctx context.Context, a *app, stdin io.Reader, o quorumOptions, jsons []string, file string) error {
	addrs, err := o.controllers()
	if err != nil {
		return err
	}
	recs, err := appendRecords(stdin, jsons, file)
	if err != nil {
		return err
	}
	encoded := make([][]byte, len(recs))
	for i, r := range recs {
		if encoded[i], err = metadata.Encode(r); err != nil {
			return fmt.Errorf("record %d: %w", i+1, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var offset int64
	var epoch int32
	err = withLeader(ctx, addrs, func(ctx context.Context, leader *controllerConn, _ string) error {
		offset, epoch, err = submitOn(ctx, leader, encoded)
		return err
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "Committed %d %s at offset %d in epoch %d.\n", len(recs), plural(len(recs), "record", "records"), offset, epoch)
	return err
}

// appendRecords parses the records of --json and --file, in that order.
func appendRecords(stdin io.Reader, jsons []string, file string) ([]metadata.Record, error) {
	if len(jsons) > 0 && file != "" {
		return nil, errors.New("give records with --json or with --file, not both")
	}
	var recs []metadata.Record
	for i, j := range jsons {
		r, err := dumplog.ParsePayload([]byte(j))
		if err != nil {
			return nil, fmt.Errorf("--json %d: %w", i+1, err)
		}
		recs = append(recs, r)
	}
	if file != "" {
		in := stdin
		if file != "-" {
			f, err := os.Open(file)
			if err != nil {
				return nil, fmt.Errorf("--file: %w", err)
			}
			defer f.Close()
			in = f
		}
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, 64<<10), maxAppendLine)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			r, err := dumplog.ParsePayload([]byte(line))
			if err != nil {
				return nil, fmt.Errorf("--file %s line %d: %w", file, n, err)
			}
			recs = append(recs, r)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("--file %s: %w", file, err)
		}
	}
	if len(recs) == 0 {
		return nil, errors.New("append needs at least one record: give --json RECORD or --file FILE")
	}
	return recs, nil
}

// submitOn sends one SubmitChange with the encoded records to the leader
// and returns the committed offset and epoch. Only NOT_LEADER_OR_FOLLOWER
// is retried elsewhere: any other failure, a lost answer included, may
// follow a commit, and sending again could commit the records twice.
func submitOn(ctx context.Context, leader *controllerConn, encoded [][]byte) (int64, int32, error) {
	req := wire.NewSubmitChangeRequest()
	req.Records = encoded
	resp, err := leader.request(ctx, req)
	if err != nil {
		return 0, 0, fmt.Errorf("%w; the records may or may not have been committed: check with metadata-shell before appending them again", err)
	}
	r := resp.(*wire.SubmitChangeResponse)
	if r.ErrorCode == kerr.NotLeaderForPartition.Code {
		return 0, 0, fmt.Errorf("controller %s is no longer the leader: %w", leader.addr, errRetry)
	}
	if r.ErrorCode != 0 {
		name := strconv.Itoa(int(r.ErrorCode))
		if e := kerr.TypedErrorForCode(r.ErrorCode); e != nil {
			name = e.Message
		}
		msg := ""
		if r.ErrorMessage != nil {
			msg = ": " + *r.ErrorMessage
		}
		return 0, 0, fmt.Errorf("controller %s refused the records (%s)%s", leader.addr, name, msg)
	}
	return r.BaseOffset, r.Epoch, nil
}

// devTryLine is the command line krabka dev prints for a first write and
// read: create topic "hello" with append and list the topics with the
// shell, both against the controller at addr.
func devTryLine(addr string) string {
	const topic = `{"type":"TOPIC_RECORD","version":0,"data":{"name":"hello","topicId":"aGVsbG8ta3JhYmthLXRvcA"}}`
	return "krabka metadata-quorum --bootstrap-controller " + addr + " append --json '" + topic + "'" +
		" && krabka metadata-shell --bootstrap-controller " + addr + " ls /image/topics/byName"
}
