package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/metadata"
	"github.com/xdg-go/scram"
)

// scramMetadataVersion is metadata.version 3.5-IV2, the first that
// holds SCRAM credentials (KIP-554).
const scramMetadataVersion = 11

// scramDefaultIterations is the iteration count of a credential that
// names none (Kafka's ScramParser default, the minimum).
const scramDefaultIterations = transport.ScramMinIterations

// parseAddScram reads one --add-scram value in Kafka's kafka-storage
// syntax (ScramParser, KIP-900): MECHANISM=[name=NAME,password=PASSWORD]
// or MECHANISM=[name=NAME,salt=SALT,saltedpassword=SALTED], with an
// optional iterations=N in either form; SALT and SALTED are base64, and
// any value may be double-quoted. It returns the credential record, the
// salt drawn at random when none is given. Its errors name what is
// wrong, never a password or a salted password.
func parseAddScram(s string) (*metadata.UserScramCredentialRecord, error) {
	mechText, rest, ok := strings.Cut(s, "=")
	if !ok {
		return nil, errors.New("want MECHANISM=[name=NAME,password=PASSWORD]")
	}
	mechText = strings.TrimSpace(mechText)
	var mech int8
	var gen scram.HashGeneratorFcn
	var newHash func() hash.Hash
	switch mechText {
	case transport.MechanismScramSHA256:
		mech, gen, newHash = metadata.ScramSHA256, scram.SHA256, sha256.New
	case transport.MechanismScramSHA512:
		mech, gen, newHash = metadata.ScramSHA512, scram.SHA512, sha512.New
	default:
		return nil, fmt.Errorf("unknown SCRAM mechanism %q: use %s or %s", mechText, transport.MechanismScramSHA256, transport.MechanismScramSHA512)
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") || len(rest) < 2 {
		return nil, fmt.Errorf("%s: the attributes must be in brackets, [name=NAME,password=PASSWORD]", mechText)
	}
	attrs := map[string]string{}
	for i, field := range strings.Split(rest[1:len(rest)-1], ",") {
		k, v, ok := strings.Cut(field, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// The field is not shown: it may be a part of a password.
			return nil, fmt.Errorf("%s: attribute %d is not KEY=VALUE (a comma inside a value is not supported)", mechText, i+1)
		}
		switch k {
		case "name", "password", "salt", "saltedpassword", "iterations":
		default:
			return nil, fmt.Errorf("%s: attribute %d has an unknown key (the keys are name, password, salt, saltedpassword, iterations)", mechText, i+1)
		}
		if _, dup := attrs[k]; dup {
			return nil, fmt.Errorf("%s: attribute %s is given twice", mechText, k)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		attrs[k] = v
	}
	rec := metadata.NewUserScramCredentialRecord()
	rec.Mechanism = mech
	rec.Name = attrs["name"]
	if rec.Name == "" {
		return nil, fmt.Errorf("%s: the name attribute is missing or empty", mechText)
	}
	iters := scramDefaultIterations
	if text, ok := attrs["iterations"]; ok {
		n, err := strconv.Atoi(text)
		if err != nil || n < transport.ScramMinIterations || n > transport.ScramMaxIterations {
			return nil, fmt.Errorf("%s user %s: iterations %q must be a number from %d to %d", mechText, rec.Name, text, transport.ScramMinIterations, transport.ScramMaxIterations)
		}
		iters = n
	}
	rec.Iterations = int32(iters)
	password, hasPassword := attrs["password"]
	saltText, hasSalt := attrs["salt"]
	salted, hasSalted := attrs["saltedpassword"]
	switch {
	case hasPassword && (hasSalt || hasSalted):
		return nil, fmt.Errorf("%s user %s: give either password or salt and saltedpassword, not both", mechText, rec.Name)
	case hasPassword:
		if password == "" {
			return nil, fmt.Errorf("%s user %s: the password is empty", mechText, rec.Name)
		}
		rec.Salt = make([]byte, 32)
		_, _ = rand.Read(rec.Salt)
		cl, err := gen.NewClient(rec.Name, password, "")
		if err != nil {
			return nil, fmt.Errorf("%s user %s: the name or password cannot be prepared (SASLprep)", mechText, rec.Name)
		}
		sc, err := cl.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(rec.Salt), Iters: iters})
		if err != nil {
			return nil, fmt.Errorf("%s user %s: the credential cannot be derived", mechText, rec.Name)
		}
		rec.StoredKey, rec.ServerKey = sc.StoredKey, sc.ServerKey
	case hasSalt && hasSalted:
		salt, err := base64.StdEncoding.DecodeString(saltText)
		if err != nil || len(salt) == 0 {
			return nil, fmt.Errorf("%s user %s: salt is not base64", mechText, rec.Name)
		}
		key, err := base64.StdEncoding.DecodeString(salted)
		if err != nil || len(key) != newHash().Size() {
			return nil, fmt.Errorf("%s user %s: saltedpassword is not the base64 of a %d-byte salted password", mechText, rec.Name, newHash().Size())
		}
		// RFC 5802 §3: ClientKey = HMAC(SaltedPassword, "Client Key"),
		// StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword,
		// "Server Key").
		mac := func(msg string) []byte {
			m := hmac.New(newHash, key)
			m.Write([]byte(msg))
			return m.Sum(nil)
		}
		h := newHash()
		h.Write(mac("Client Key"))
		rec.Salt, rec.StoredKey, rec.ServerKey = salt, h.Sum(nil), mac("Server Key")
	case hasSalt || hasSalted:
		return nil, fmt.Errorf("%s user %s: salt and saltedpassword go together", mechText, rec.Name)
	default:
		return nil, fmt.Errorf("%s user %s: the password attribute is missing", mechText, rec.Name)
	}
	return rec, nil
}

// scramRecords parses every --add-scram value into encoded records, a
// user and mechanism at most once, and checks that metadata.version mv
// holds SCRAM credentials.
func scramRecords(flags []string, mv int16) ([][]byte, error) {
	var out [][]byte
	seen := map[string]bool{}
	for _, f := range flags {
		rec, err := parseAddScram(f)
		if err != nil {
			return nil, fmt.Errorf("--add-scram: %w", err)
		}
		if mv < scramMetadataVersion {
			return nil, fmt.Errorf("--add-scram: SCRAM credentials need metadata.version 3.5-IV2 or later, and this format sets %s", metadataVersionName(mv))
		}
		key := fmt.Sprintf("%d/%s", rec.Mechanism, rec.Name)
		if seen[key] {
			return nil, fmt.Errorf("--add-scram: user %s has two credentials for the same mechanism", rec.Name)
		}
		seen[key] = true
		b, err := metadata.Encode(rec)
		if err != nil {
			return nil, fmt.Errorf("--add-scram: encode user %s: %w", rec.Name, err)
		}
		out = append(out, b)
	}
	return out, nil
}
