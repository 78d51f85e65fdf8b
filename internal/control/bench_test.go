package control_test

import (
	"testing"

	"github.com/krabka-go/krabka/internal/control"
)

func benchMessages() []control.Message {
	voters := []control.LeaderChangeMessageVoter{{VoterId: 1}, {VoterId: 2}, {VoterId: 3}}
	return []control.Message{
		&control.LeaderChangeMessage{LeaderId: 1, Voters: voters, GrantingVoters: voters[:2]},
		&control.SnapshotHeaderRecord{LastContainedLogTimestamp: 1700000000000},
		&control.SnapshotFooterRecord{},
		&control.KRaftVersionRecord{KRaftVersion: 1},
		&control.VotersRecord{Voters: []control.VotersRecordVoter{
			{VoterId: 1, VoterDirectoryId: [16]byte{1}, Endpoints: []control.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "controller-1.kafka.svc", Port: 9093}},
				KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MaxSupportedVersion: 1}},
			{VoterId: 2, VoterDirectoryId: [16]byte{2}, Endpoints: []control.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "controller-2.kafka.svc", Port: 9093}},
				KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MaxSupportedVersion: 1}},
			{VoterId: 3, VoterDirectoryId: [16]byte{3}, Endpoints: []control.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "controller-3.kafka.svc", Port: 9093}},
				KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MaxSupportedVersion: 1}},
		}},
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, m := range benchMessages() {
		key, value, err := control.Encode(m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(m.ControlType().String(), func(b *testing.B) {
			b.SetBytes(int64(len(key) + len(value)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := control.Decode(key, value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, m := range benchMessages() {
		b.Run(m.ControlType().String(), func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 512)
			for b.Loop() {
				var err error
				if buf, err = m.AppendTo(buf[:0], control.ValueVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
