package main

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
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
