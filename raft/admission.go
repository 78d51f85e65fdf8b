package raft

import (
	"fmt"
	"slices"

	"github.com/krabka-go/krabka/metadata"
)

// RegistrationAdmission is what the leader asks before it appends a
// submission that registers a broker anew: one holding a
// RegisterBrokerRecord for a broker id the image does not hold with the
// same incarnation id. An embedder uses it to check the registration
// against its own state and to add the records that go with it (for
// example a BrokerRegistrationChangeRecord, or the broker's directory
// assignments), all in the submission's one batch.
//
// Admit runs on the leader's engine goroutine, in log order, as Kafka's
// ClusterControlManager.registerBroker runs on its controller's event
// thread: it must return promptly, must not block on I/O and must not
// call the Controller. It is called for forwarded submissions too, on the
// leader, never on the node that forwarded them.
type RegistrationAdmission interface {
	// Admit returns the records to append in place of records (records
	// itself admits them as they are), or an error that refuses the
	// submission: the caller's SubmitChange then fails with an error
	// matching [ErrInvalidChange] that wraps it. img is the image the
	// records will be validated against (the committed image plus every
	// change the leader accepted before them); base is the offset the
	// first record will take.
	//
	// The leader then sets the BrokerEpoch of every RegisterBrokerRecord
	// to the offset the record takes (KIP-903, as Kafka's controller
	// does), so Admit need not; records must not be modified in place.
	Admit(img *metadata.Image, base int64, records []metadata.Record) ([]metadata.Record, error)
}

// registersAnew reports whether recs register a broker that img does
// not hold with the same incarnation id.
func registersAnew(img *metadata.Image, recs []metadata.Record) bool {
	for _, r := range recs {
		reg, ok := r.(*metadata.RegisterBrokerRecord)
		if !ok {
			continue
		}
		b, ok := img.Cluster().Broker(reg.BrokerId)
		if !ok || b.IncarnationID != reg.IncarnationId {
			return true
		}
	}
	return false
}

// admit runs s through the registration admission (when one is set and
// s registers a broker anew) and then sets the broker epochs of its
// registrations ([submission.setBrokerEpochs]).
func (q *submitter) admit(s *submission, base int64) error {
	if !slices.ContainsFunc(s.records, isBrokerRegistration) {
		return nil
	}
	// Apply ends the speculative image's run of in-place changes: it is
	// paid only when there is an admission to show the image to.
	if q.admission != nil {
		if img := q.spec.Apply(); registersAnew(img, s.records) {
			recs, err := callAdmission(q.admission, img, base, s.records)
			if err != nil {
				return fmt.Errorf("%w: registration admission: %w", ErrInvalidChange, err)
			}
			if len(recs) == 0 {
				return fmt.Errorf("%w: registration admission returned no records", ErrInvalidChange)
			}
			if !slices.Equal(recs, s.records) {
				s.records, s.encoded = slices.Clone(recs), make([][]byte, len(recs))
				for i, r := range recs {
					b, err := metadata.Encode(r)
					if err != nil {
						return fmt.Errorf("%w: registration admission: encode %s: %w", ErrInvalidChange, r.APIKey(), err)
					}
					s.encoded[i] = b
				}
			}
		}
	}
	return s.setBrokerEpochs(base)
}

// setBrokerEpochs sets the broker epoch of s's RegisterBrokerRecords to
// their offsets from base (KIP-903), re-encoding them. The caller's
// records are never modified: s gets copies.
func (s *submission) setBrokerEpochs(base int64) error {
	cloned := false
	for i, r := range s.records {
		reg, ok := r.(*metadata.RegisterBrokerRecord)
		if !ok || reg.BrokerEpoch == base+int64(i) {
			continue
		}
		if !cloned {
			s.records, s.encoded, cloned = slices.Clone(s.records), slices.Clone(s.encoded), true
		}
		cp := *reg
		cp.BrokerEpoch = base + int64(i)
		b, err := metadata.Encode(&cp)
		if err != nil {
			return fmt.Errorf("%w: encode %s: %w", ErrInvalidChange, cp.APIKey(), err)
		}
		s.records[i], s.encoded[i] = &cp, b
	}
	return nil
}

// isBrokerRegistration reports whether r is a RegisterBrokerRecord.
func isBrokerRegistration(r metadata.Record) bool {
	_, ok := r.(*metadata.RegisterBrokerRecord)
	return ok
}

// callAdmission calls a.Admit, turning a panic into an error: an
// embedder's bug refuses the one submission, not the node.
func callAdmission(a RegistrationAdmission, img *metadata.Image, base int64, recs []metadata.Record) (out []metadata.Record, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return a.Admit(img, base, recs)
}
