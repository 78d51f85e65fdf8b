package main

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/xdg-go/scram"
)

// readBootstrapScram returns the SCRAM credential records of
// dir/bootstrap.checkpoint.
func readBootstrapScram(t *testing.T, dir string) []*metadata.UserScramCredentialRecord {
	t.Helper()
	r, err := snapshot.Open(vfs.OS(), filepath.Join(dir, snapshot.BootstrapFile), snapshot.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*metadata.UserScramCredentialRecord
	for r.Next() {
		for _, rec := range r.Batch().Records {
			m, err := metadata.Decode(rec.Value)
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := m.(*metadata.UserScramCredentialRecord); ok {
				out = append(out, s)
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFormatAddScram: --add-scram writes a credential record per value
// into bootstrap.checkpoint, which a SCRAM client with the password
// matches, and the salted-password form gives the keys RFC 5802 derives.
func TestFormatAddScram(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	salted := pbkdf2Key(t, "bob-secret", []byte("bob-salt"), 8192)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props,
		"--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
		"-S", `SCRAM-SHA-256=[name=bob,iterations=8192,salt="`+base64.StdEncoding.EncodeToString([]byte("bob-salt"))+`",saltedpassword="`+base64.StdEncoding.EncodeToString(salted)+`"]`,
		"-S", "SCRAM-SHA-512=[name=alice,iterations=16384,password=alice-secret]")
	recs := readBootstrapScram(t, n.meta)
	if len(recs) != 3 {
		t.Fatalf("%d SCRAM records, want 3", len(recs))
	}
	for i, want := range []struct {
		name, password string
		mech           int8
		iters          int32
	}{{"alice", "alice-secret", metadata.ScramSHA256, 4096}, {"bob", "bob-secret", metadata.ScramSHA256, 8192}, {"alice", "alice-secret", metadata.ScramSHA512, 16384}} {
		r := recs[i]
		if r.Name != want.name || r.Mechanism != want.mech || r.Iterations != want.iters {
			t.Fatalf("record %d: %s mechanism %d iterations %d", i, r.Name, r.Mechanism, r.Iterations)
		}
		gen := scram.SHA256
		if want.mech == metadata.ScramSHA512 {
			gen = scram.SHA512
		}
		cl, err := gen.NewClient(want.name, want.password, "")
		if err != nil {
			t.Fatal(err)
		}
		sc, err := cl.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(r.Salt), Iters: int(r.Iterations)})
		if err != nil {
			t.Fatal(err)
		}
		if !hmac.Equal(sc.StoredKey, r.StoredKey) || !hmac.Equal(sc.ServerKey, r.ServerKey) {
			t.Errorf("record %d (%s): the keys do not match the password", i, r.Name)
		}
	}
}

func pbkdf2Key(t *testing.T, password string, salt []byte, iters int) []byte {
	t.Helper()
	k, err := pbkdf2.Key(sha256.New, password, salt, iters, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestFormatAddScramRefusesBadInput: each malformed --add-scram fails
// the format with an error naming what is wrong and no password.
func TestFormatAddScramRefusesBadInput(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"SCRAM-SHA-1=[name=alice,password=alice-secret]", "unknown SCRAM mechanism"},
		{"SCRAM-SHA-256=[password=alice-secret]", "name attribute is missing"},
		{"SCRAM-SHA-256=[name=alice,password=alice-secret,iterations=100]", "iterations \"100\" must be a number from 4096 to 16384"},
		{"SCRAM-SHA-256=[name=alice,password=alice-secret,iterations=16385]", "from 4096 to 16384"},
		{"SCRAM-SHA-256=name=alice,password=alice-secret", "must be in brackets"},
		{"SCRAM-SHA-256=[name=alice,password=alice-secret", "must be in brackets"},
		{"SCRAM-SHA-256=[name=alice,alice-secret]", "attribute 2 is not KEY=VALUE"},
		{"SCRAM-SHA-256=[name=alice,pasword=alice-secret]", "unknown key"},
		{"SCRAM-SHA-256=[name=alice]", "password attribute is missing"},
		{"SCRAM-SHA-256=[name=alice,salt=c2FsdA==]", "salt and saltedpassword go together"},
		{"SCRAM-SHA-256=[name=alice,salt=c2FsdA==,saltedpassword=alice-secret]", "saltedpassword is not the base64"},
		{"SCRAM-SHA-256=[name=alice,password=alice-secret,name=bob]", "given twice"},
		{"alice-secret", "want MECHANISM="},
	} {
		_, err := parseAddScram(tc.arg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseAddScram(%q) = %v, want an error saying %q", tc.arg, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("parseAddScram(%q): the error shows the password: %v", tc.arg, err)
		}
	}
	n := newTestNode(t, 1, staticVoters)
	mustFail(t, "metadata.version 3.5-IV2", "storage", "format", "-t", testClusterID, "-c", n.props, "-r", "3.4", "-S", "SCRAM-SHA-256=[name=alice,password=alice-secret]")
	n = newTestNode(t, 1, staticVoters)
	mustFail(t, "two credentials", "storage", "format", "-t", testClusterID, "-c", n.props,
		"-S", "SCRAM-SHA-256=[name=alice,password=alice-secret]", "-S", "SCRAM-SHA-256=[name=alice,password=other-secret]")
}

// FuzzParseAddScram: no input panics the --add-scram parser, an
// accepted one is a valid credential, and no error shows the password
// attribute's value (alice-secret, when it is nothing else in the input).
func FuzzParseAddScram(f *testing.F) {
	f.Add("SCRAM-SHA-256=[name=alice,password=alice-secret]")
	f.Add("SCRAM-SHA-512=[name=alice,iterations=8192,password=\"alice-secret\"]")
	f.Add("SCRAM-SHA-256=[name=bob,salt=\"c2FsdA==\",saltedpassword=\"" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\",iterations=4096]")
	f.Add("SCRAM-SHA-256=[name=,password=]")
	f.Fuzz(func(t *testing.T, s string) {
		rec, err := parseAddScram(s)
		if err != nil {
			// alice-secret is a password wherever it appears in s.
			onlyPassword := strings.Count(s, "alice-secret") == strings.Count(s, ",password=alice-secret")+strings.Count(s, "[password=alice-secret")
			if onlyPassword && strings.Contains(err.Error(), "alice-secret") {
				t.Fatalf("error shows the password: %v", err)
			}
			return
		}
		if rec.Name == "" || rec.Iterations < 4096 || rec.Iterations > 16384 || len(rec.Salt) == 0 || len(rec.StoredKey) == 0 || len(rec.ServerKey) == 0 {
			t.Fatalf("accepted %q as %+v", s, rec)
		}
	})
}

// TestFormatAddScramQuorumElects: three controllers that authenticate to
// each other with SCRAM-SHA-512 over SASL_PLAINTEXT, formatted with
// storage format --add-scram (KIP-900), elect their first leader: before
// anything is committed each listener takes the credentials from its
// bootstrap.checkpoint. The quorum then commits, and a client with a
// credential from the bootstrap authenticates against the committed
// image.
func TestFormatAddScramQuorumElects(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.scram.ScramLoginModule required username="controller" password="controller-secret";`
	var ports []int
	var voters []string
	for i := range 3 {
		ports = append(ports, freePort(t))
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[i]))
	}
	var ctls []*raft.Controller
	for i := range 3 {
		tn := newTestNode(t, i+1, fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", ports[i]),
			"controller.quorum.voters="+strings.Join(voters, ","), "controller.quorum.election.timeout.ms=300",
			"listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT",
			"sasl.enabled.mechanisms=SCRAM-SHA-512", "sasl.mechanism.controller.protocol=SCRAM-SHA-512",
			"listener.name.controller.scram-sha-512.sasl.jaas.config="+jaas)
		mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", tn.props,
			"--add-scram", "SCRAM-SHA-512=[name=controller,password=controller-secret]",
			"--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]")
		ctls = append(ctls, launchNode(t, tn.props))
	}
	leader := waitLeader(t, ctls)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic := metadata.NewTopicRecord()
	topic.Name, topic.TopicId[0] = "scram-topic", 7
	// A follower learns of the new leader by replicating from it, over
	// SCRAM too; until then its write fails with the leader unknown.
	var res raft.SubmitResult
	var err error
	for res, err = ctls[(leader+1)%3].SubmitChange(ctx, []metadata.Record{topic}); errors.Is(err, raft.ErrLeaderUnknown); {
		time.Sleep(10 * time.Millisecond)
		res, err = ctls[(leader+1)%3].SubmitChange(ctx, []metadata.Record{topic})
	}
	if err != nil {
		t.Fatalf("a forwarded write over SCRAM: %v", err)
	}
	for _, c := range ctls {
		// The image is published after the high watermark moves.
		for c.CurrentImage().Offset() < res.LastOffset {
			if ctx.Err() != nil {
				t.Fatalf("node %d did not replicate offset %d", c.QuorumState().NodeID, res.LastOffset)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, ok := c.CurrentImage().Scram().Get(metadata.ScramSHA512, "alice"); !ok {
			t.Errorf("node %d: the committed image has no credential for alice", c.QuorumState().NodeID)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(ctls[leader].Addr().String()), kgo.RequestRetries(0),
		kgo.SASL(kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	if _, err := req.RequestWith(ctx, cl.SeedBrokers()[0]); err != nil {
		t.Fatalf("DescribeQuorum as alice over SCRAM: %v", err)
	}
}
