package raft

import (
	"errors"
	"fmt"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
)

// encodeControlBatch encodes a control batch the core made (an Append with
// handle 0): its LeaderChange, KRaftVersion and Voters records, in that
// order, at the batch's offsets and epoch.
func encodeControlBatch(b kraft.BatchInfo, timestamp int64) ([]byte, error) {
	var msgs []control.Message
	if b.LeaderChange.LeaderID != kraft.NoNode {
		lc := control.NewLeaderChangeMessage()
		lc.LeaderId = int32(b.LeaderChange.LeaderID)
		for _, k := range b.LeaderChange.Voters {
			lc.Voters = append(lc.Voters, control.LeaderChangeMessageVoter{VoterId: int32(k.ID)})
		}
		for _, k := range b.LeaderChange.Granting {
			lc.GrantingVoters = append(lc.GrantingVoters, control.LeaderChangeMessageVoter{VoterId: int32(k.ID)})
		}
		msgs = append(msgs, lc)
	}
	if b.KRaftVersion >= 0 {
		kv := control.NewKRaftVersionRecord()
		kv.KRaftVersion = b.KRaftVersion
		msgs = append(msgs, kv)
	}
	if b.Voters != nil {
		vr := control.NewVotersRecord()
		for _, k := range b.Voters {
			vr.Voters = append(vr.Voters, control.VotersRecordVoter{VoterId: int32(k.ID), VoterDirectoryId: [16]byte(k.DirectoryID)})
		}
		msgs = append(msgs, vr)
	}
	if int64(len(msgs)) != b.Records() {
		return nil, fmt.Errorf("raft: control batch %s: %d control records for %d offsets", b, len(msgs), b.Records())
	}
	kvs := make([]recordbatch.KeyValue, len(msgs))
	for i, m := range msgs {
		key, value, err := control.Encode(m)
		if err != nil {
			return nil, fmt.Errorf("raft: encode control batch %s: %w", b, err)
		}
		kvs[i] = recordbatch.KeyValue{Key: key, Value: value}
	}
	p := recordbatch.DefaultParams()
	p.BaseOffset = int64(b.BaseOffset)
	p.PartitionLeaderEpoch = int32(b.Epoch)
	out, err := recordbatch.AppendControlBatch(nil, p, timestamp, kvs...)
	if err != nil {
		return nil, fmt.Errorf("raft: encode control batch %s: %w", b, err)
	}
	return out, nil
}

// summarize returns the core's summary of a decoded batch: offsets, epoch
// and, for a control batch, its LeaderChange, KRaftVersion and Voters
// records. Control records of other or unknown types are skipped, as
// Kafka's readers skip them.
func summarize(b *recordbatch.Batch) (kraft.BatchInfo, error) {
	info := kraft.BatchInfo{
		BaseOffset:   kraft.Offset(b.BaseOffset),
		LastOffset:   kraft.Offset(b.LastOffset()),
		Epoch:        kraft.Epoch(b.PartitionLeaderEpoch),
		Control:      b.IsControl(),
		KRaftVersion: -1,
		LeaderChange: kraft.LeaderChange{LeaderID: kraft.NoNode},
	}
	if !info.Control {
		return info, nil
	}
	for i := range b.Records {
		r := &b.Records[i]
		msg, err := control.Decode(r.Key, r.Value)
		if err != nil {
			var unknown *control.UnknownTypeError
			if errors.As(err, &unknown) {
				continue
			}
			return kraft.BatchInfo{}, fmt.Errorf("raft: control record at offset %d: %w", b.RecordOffset(r), err)
		}
		switch m := msg.(type) {
		case *control.LeaderChangeMessage:
			info.LeaderChange.LeaderID = kraft.NodeID(m.LeaderId)
			for _, v := range m.Voters {
				info.LeaderChange.Voters = append(info.LeaderChange.Voters, kraft.ReplicaKey{ID: kraft.NodeID(v.VoterId), DirectoryID: kraft.UUID(v.VoterDirectoryId)})
			}
			for _, v := range m.GrantingVoters {
				info.LeaderChange.Granting = append(info.LeaderChange.Granting, kraft.ReplicaKey{ID: kraft.NodeID(v.VoterId), DirectoryID: kraft.UUID(v.VoterDirectoryId)})
			}
		case *control.KRaftVersionRecord:
			info.KRaftVersion = m.KRaftVersion
		case *control.VotersRecord:
			info.Voters = []kraft.ReplicaKey{}
			for _, v := range m.Voters {
				info.Voters = append(info.Voters, kraft.ReplicaKey{ID: kraft.NodeID(v.VoterId), DirectoryID: kraft.UUID(v.VoterDirectoryId)})
			}
		}
	}
	return info, nil
}
