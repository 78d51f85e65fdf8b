package raft

import (
	"errors"
	"sync"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/metadata"
)

// admissionFunc is a RegistrationAdmission of a function.
type admissionFunc func(img *metadata.Image, base int64, recs []metadata.Record) ([]metadata.Record, error)

func (f admissionFunc) Admit(img *metadata.Image, base int64, recs []metadata.Record) ([]metadata.Record, error) {
	return f(img, base, recs)
}

// registeredImage is committedImage (applied up to 3) with broker 7
// registered at offset 4 by incarnation 1.
func registeredImage(t *testing.T) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(committedImage(t))
	reg := brokerRecord(7)
	reg.BrokerEpoch = 4
	if err := d.Replay(reg, 4, 2); err != nil {
		t.Fatal(err)
	}
	return d.Apply()
}

// TestBrokerEpochIsTheRegistrationOffset: the leader sets the broker
// epoch of every RegisterBrokerRecord to the offset the record takes
// (KIP-903), whatever the caller wrote, and never changes the caller's
// record.
func TestBrokerEpochIsTheRegistrationOffset(t *testing.T) {
	img := registeredImage(t)
	st := kraft.Status{Role: kraft.Leader, Epoch: 3, LogEndOffset: 5}
	var q submitter
	reg := brokerRecord(8)
	reg.BrokerEpoch = 99
	var got error
	s := condSubmission(t, &got, []metadata.Record{topicRecord("payments"), reg})
	q.propose([]*submission{s}, st, img, 0, 1<<20, &recordingProposer{next: 5})
	if got != errPending {
		t.Fatalf("registration refused: %v", got)
	}
	if reg.BrokerEpoch != 99 {
		t.Errorf("the caller's record was changed: epoch %d", reg.BrokerEpoch)
	}
	stored, err := metadata.Decode(s.encoded[1])
	if err != nil {
		t.Fatal(err)
	}
	if e := stored.(*metadata.RegisterBrokerRecord).BrokerEpoch; e != 6 {
		t.Errorf("appended broker epoch %d, want its offset 6", e)
	}
	if b, ok := q.spec.Apply().Cluster().Broker(8); !ok || b.Epoch != 6 {
		t.Errorf("speculative image: broker 8 %+v, want epoch 6", b)
	}
}

// TestRegistrationAdmission: the leader asks the admission before it
// appends a registration of a broker anew (a new id or a new
// incarnation), not for other submissions or a re-registration of the
// same incarnation; what it returns is appended, its refusal or panic
// refuses the one submission.
func TestRegistrationAdmission(t *testing.T) {
	img := registeredImage(t)
	st := kraft.Status{Role: kraft.Leader, Epoch: 3, LogEndOffset: 5}
	newIncarnation := brokerRecord(7)
	newIncarnation.IncarnationId[15] = 2
	fence := metadata.NewFenceBrokerRecord()
	fence.Id = 9
	cases := []struct {
		name   string
		recs   []metadata.Record
		admit  admissionFunc
		asked  bool
		want   error // nil: appended
		stored int   // records appended
	}{
		{name: "other records", recs: []metadata.Record{topicRecord("payments")}, want: nil, stored: 1},
		{name: "same incarnation", recs: []metadata.Record{brokerRecord(7)}, want: nil, stored: 1},
		{name: "new incarnation", recs: []metadata.Record{newIncarnation}, asked: true, want: nil, stored: 1},
		{name: "new broker", recs: []metadata.Record{brokerRecord(9)}, asked: true, want: nil, stored: 1},
		{name: "records added", recs: []metadata.Record{brokerRecord(9)}, asked: true, stored: 2,
			admit: func(_ *metadata.Image, _ int64, recs []metadata.Record) ([]metadata.Record, error) {
				f := metadata.NewBrokerRegistrationChangeRecord()
				f.BrokerId, f.BrokerEpoch, f.Fenced = 9, 5, -1
				return append(recs[:len(recs):len(recs)], f), nil
			}},
		{name: "refused", recs: []metadata.Record{brokerRecord(9)}, asked: true, want: errDuplicate,
			admit: func(*metadata.Image, int64, []metadata.Record) ([]metadata.Record, error) { return nil, errDuplicate }},
		{name: "panics", recs: []metadata.Record{brokerRecord(9)}, asked: true, want: ErrInvalidChange,
			admit: func(*metadata.Image, int64, []metadata.Record) ([]metadata.Record, error) { panic("embedder bug") }},
		{name: "returns nothing", recs: []metadata.Record{brokerRecord(9)}, asked: true, want: ErrInvalidChange,
			admit: func(*metadata.Image, int64, []metadata.Record) ([]metadata.Record, error) { return nil, nil }},
		{name: "returns an invalid change", recs: []metadata.Record{brokerRecord(9)}, asked: true, want: ErrInvalidChange,
			admit: func(_ *metadata.Image, _ int64, recs []metadata.Record) ([]metadata.Record, error) {
				return append(recs[:len(recs):len(recs)], fence), nil // broker 9 has no epoch 0
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			q := submitter{admission: admissionFunc(func(img *metadata.Image, base int64, recs []metadata.Record) ([]metadata.Record, error) {
				asked = true
				if base != 5 {
					t.Errorf("admission told base %d, want 5", base)
				}
				if _, ok := img.Cluster().Broker(7); !ok {
					t.Error("admission's image lacks the registered broker")
				}
				if tc.admit != nil {
					return tc.admit(img, base, recs)
				}
				return recs, nil
			})}
			p := &recordingProposer{next: 5}
			var got error
			s := condSubmission(t, &got, tc.recs)
			q.propose([]*submission{s}, st, img, 0, 1<<20, p)
			if asked != tc.asked {
				t.Errorf("admission asked: %v, want %v", asked, tc.asked)
			}
			switch {
			case tc.want == nil && got != errPending:
				t.Fatalf("refused: %v", got)
			case tc.want == nil && (p.next != 5+kraft.Offset(tc.stored) || len(s.encoded) != tc.stored):
				t.Fatalf("appended %d records (%d encoded), want %d", p.next-5, len(s.encoded), tc.stored)
			case tc.want != nil && (!errors.Is(got, tc.want) || !errors.Is(got, ErrInvalidChange)):
				t.Fatalf("err = %v, want %v as an invalid change", got, tc.want)
			case tc.want != nil && p.batches != 0:
				t.Fatal("a refused registration was proposed")
			}
		})
	}
}

var errDuplicate = errors.New("another broker is registered with that broker id")

// TestClusterRegistrationAdmission: on a running quorum a registration
// submitted through a follower is admitted by the leader alone, gets the
// broker epoch of its offset, and every node's image holds it.
func TestClusterRegistrationAdmission(t *testing.T) {
	var mu sync.Mutex
	asked := map[NodeID]int{}
	c := newTestClusterWith(t, 3, "", func(cfg *Config) {
		id := cfg.NodeID
		cfg.RegistrationAdmission = admissionFunc(func(_ *metadata.Image, _ int64, recs []metadata.Record) ([]metadata.Record, error) {
			mu.Lock()
			asked[id]++
			mu.Unlock()
			return recs, nil
		})
	})
	leader := c.leader()
	f := c.follower(leader)
	submit(t, c.node(leader), metadataVersionRecord())
	res, err := c.node(f).SubmitChange(t.Context(), []metadata.Record{brokerRecord(9)})
	if err != nil {
		t.Fatal(err)
	}
	c.waitApplied(res.LastOffset + 1)
	for i, n := range c.nodes {
		b, ok := n.CurrentImage().Cluster().Broker(9)
		if !ok || b.Epoch != res.Offset {
			t.Errorf("node %d: broker 9 %+v, want broker epoch %d (its record's offset)", i+1, b, res.Offset)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if asked[leader] != 1 || len(asked) != 1 {
		t.Errorf("admission asked %v, want once on the leader %d", asked, leader)
	}
}
