package raft

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
	"unicode/utf16"
)

// An encrypted PKCS#8 private key (RFC 5958 EncryptedPrivateKeyInfo,
// "BEGIN ENCRYPTED PRIVATE KEY"), as Kafka's PEM key stores take it with
// ssl.key.password. Krabka reads the PBES2 scheme (RFC 8018) with PBKDF2
// and AES-CBC, which is what openssl pkcs8 -topk8 and Java's PBES2
// ciphers write; the older PKCS#5 v1 and PKCS#12 schemes (DES, 3DES, RC2,
// RC4) are refused by name.
type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                      `asn1:"optional"`
	PRF            pkix.AlgorithmIdentifier `asn1:"optional"`
}

var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}

	// pbkdf2PRFs are the PBKDF2 pseudo-random functions, by OID; an
	// absent PRF is HMAC-SHA1, RFC 8018's default.
	pbkdf2PRFs = map[string]func() hash.Hash{
		"1.2.840.113549.2.7":  sha1.New,
		"1.2.840.113549.2.8":  sha256.New224,
		"1.2.840.113549.2.9":  sha256.New,
		"1.2.840.113549.2.10": sha512.New384,
		"1.2.840.113549.2.11": sha512.New,
	}
	// aesCBCKeySizes are the AES-CBC encryption schemes, by OID.
	aesCBCKeySizes = map[string]int{
		"2.16.840.1.101.3.4.1.2":  16,
		"2.16.840.1.101.3.4.1.22": 24,
		"2.16.840.1.101.3.4.1.42": 32,
	}
)

// maxPBKDF2Iterations bounds the work a key file can ask for: far above
// what tools write (openssl: 2048; Java: 10000), far below a stall.
const maxPBKDF2Iterations = 10_000_000

// decryptPKCS8 returns the PKCS#8 DER of the private key that der, an
// EncryptedPrivateKeyInfo, holds encrypted with password.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) != 0 {
		return nil, errors.New("encrypted private key: not an EncryptedPrivateKeyInfo")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted private key: scheme %s is not implemented; re-encrypt the key with PBES2 and AES (openssl pkcs8 -topk8 -v2 aes-256-cbc)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("encrypted private key: PBES2 parameters: %w", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("encrypted private key: key derivation %s is not implemented; only PBKDF2 is", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("encrypted private key: PBKDF2 parameters: %w", err)
	}
	prf := sha1.New
	if len(kdf.PRF.Algorithm) > 0 {
		var ok bool
		if prf, ok = pbkdf2PRFs[kdf.PRF.Algorithm.String()]; !ok {
			return nil, fmt.Errorf("encrypted private key: PBKDF2 function %s is not implemented", kdf.PRF.Algorithm)
		}
	}
	keySize, ok := aesCBCKeySizes[params.EncryptionScheme.Algorithm.String()]
	if !ok {
		return nil, fmt.Errorf("encrypted private key: cipher %s is not implemented; only AES-CBC is", params.EncryptionScheme.Algorithm)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != keySize {
		return nil, fmt.Errorf("encrypted private key: PBKDF2 key length %d does not fit the cipher", kdf.KeyLength)
	}
	if kdf.IterationCount < 1 || kdf.IterationCount > maxPBKDF2Iterations {
		return nil, fmt.Errorf("encrypted private key: %d PBKDF2 iterations, want 1 to %d", kdf.IterationCount, maxPBKDF2Iterations)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("encrypted private key: the AES-CBC parameters are not a 16-byte IV")
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, errors.New("encrypted private key: the encrypted data is not whole AES blocks")
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.IterationCount, keySize)
	if err != nil {
		return nil, fmt.Errorf("encrypted private key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	n := int(plain[len(plain)-1])
	if n == 0 || n > aes.BlockSize {
		return nil, errWrongKeyPassword
	}
	for _, b := range plain[len(plain)-n:] {
		if int(b) != n {
			return nil, errWrongKeyPassword
		}
	}
	return plain[:len(plain)-n], nil
}

// errWrongKeyPassword: the key did not decrypt.
var errWrongKeyPassword = errors.New("encrypted private key does not decrypt with ssl.key.password: wrong password, or a damaged key")

// A PKCS12 key store whose private key has a password of its own
// (ssl.key.password other than ssl.keystore.password), as Java's PKCS12
// KeyStore writes one when setKeyEntry is given another password, and as
// Kafka's key manager reads it: the store's MAC and its certificates open
// with the store password, the key with the key password (RFC 7292).
// go-pkcs12 reads a store under one password, so such a store is
// rewritten before it is decoded: its MAC is checked with the store
// password, each shrouded key bag of its unencrypted contents is
// decrypted with the key password into a plain key bag, and the MAC is
// made anew over the result with the store password.

// pfx is RFC 7292's PFX: the authenticated safe, as a data ContentInfo,
// and the MAC over its contents.
type pfx struct {
	Version  int
	AuthSafe pkcs12ContentInfo
	MacData  pfxMacData `asn1:"optional"`
}

type pkcs12ContentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"tag:0,explicit,optional"`
}

type pfxMacData struct {
	Mac        pfxDigestInfo
	MacSalt    []byte
	Iterations int `asn1:"optional,default:1"`
}

type pfxDigestInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Digest    []byte
}

// pkcs12Bag is a SafeBag; its attributes (the friendly name, the local
// key id) are kept as they are.
type pkcs12Bag struct {
	ID         asn1.ObjectIdentifier
	Value      asn1.RawValue `asn1:"tag:0,explicit"`
	Attributes asn1.RawValue `asn1:"optional"`
}

// pkcs12PBEParams are the parameters of the PKCS#12 password-based
// ciphers (RFC 7292 appendix C).
type pkcs12PBEParams struct {
	Salt       []byte
	Iterations int
}

var (
	oidPKCS7Data            = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidPKCS12KeyBag         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 1}
	oidPKCS12ShroudedKeyBag = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 2}
	oidPBEWithSHAAnd3KeyDES = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 3}
	pkcs12MacDigests        = map[string]func() hash.Hash{
		"1.3.14.3.2.26":          sha1.New,
		"2.16.840.1.101.3.4.2.4": sha256.New224,
		"2.16.840.1.101.3.4.2.1": sha256.New,
		"2.16.840.1.101.3.4.2.2": sha512.New384,
		"2.16.840.1.101.3.4.2.3": sha512.New,
	}
)

// pkcs12WithKeyPassword returns data, a PKCS12 key store, rewritten so
// that it opens with storePassword alone: its private keys decrypted with
// keyPassword. The errors name the property whose password failed.
func pkcs12WithKeyPassword(data []byte, storePassword, keyPassword string) ([]byte, error) {
	var p pfx
	if rest, err := asn1.Unmarshal(data, &p); err != nil || len(rest) != 0 {
		return nil, errors.New("not a PKCS12 key store, or a damaged one: the file is not DER-encoded PKCS#12")
	}
	if !p.AuthSafe.ContentType.Equal(oidPKCS7Data) {
		return nil, errors.New("the PKCS12 key store is protected by a public key, not a password; Krabka reads password-protected stores")
	}
	var authSafe []byte
	if _, err := asn1.Unmarshal(p.AuthSafe.Content.Bytes, &authSafe); err != nil {
		return nil, fmt.Errorf("not a PKCS12 key store, or a damaged one: %v", err)
	}
	if len(p.MacData.Mac.Algorithm.Algorithm) == 0 {
		return nil, fmt.Errorf("the PKCS12 key store has no password, so %s must not be set", keySSLKeystorePassword)
	}
	macPassword, err := checkPKCS12Mac(p.MacData, authSafe, storePassword)
	if err != nil {
		return nil, err
	}
	var infos []asn1.RawValue
	if rest, err := asn1.Unmarshal(authSafe, &infos); err != nil || len(rest) != 0 {
		return nil, errors.New("not a PKCS12 key store, or a damaged one: its contents are not a sequence of ContentInfo")
	}
	keys := 0
	for i, raw := range infos {
		var ci pkcs12ContentInfo
		if _, err := asn1.Unmarshal(raw.FullBytes, &ci); err != nil {
			return nil, fmt.Errorf("not a PKCS12 key store, or a damaged one: %v", err)
		}
		if !ci.ContentType.Equal(oidPKCS7Data) {
			continue // encrypted with the store password, as go-pkcs12 reads it
		}
		var contents []byte
		if _, err := asn1.Unmarshal(ci.Content.Bytes, &contents); err != nil {
			return nil, fmt.Errorf("not a PKCS12 key store, or a damaged one: %v", err)
		}
		rewritten, n, err := decryptKeyBags(contents, keyPassword)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		keys += n
		octets, err := asn1.Marshal(rewritten)
		if err != nil {
			return nil, err
		}
		if infos[i].FullBytes, err = asn1.Marshal(pkcs12ContentInfo{ContentType: oidPKCS7Data, Content: explicitZero(octets)}); err != nil {
			return nil, err
		}
	}
	if keys == 0 {
		return nil, fmt.Errorf("the PKCS12 key store holds no private key protected by its own password, so %s cannot open one: remove %s", keySSLKeyPassword, keySSLKeyPassword)
	}
	if authSafe, err = asn1.Marshal(infos); err != nil {
		return nil, err
	}
	octets, err := asn1.Marshal(authSafe)
	if err != nil {
		return nil, err
	}
	p.AuthSafe.Content = explicitZero(octets)
	p.MacData.Mac.Digest = pkcs12Mac(pkcs12MacDigests[p.MacData.Mac.Algorithm.Algorithm.String()], p.MacData, authSafe, macPassword)
	return asn1.Marshal(p)
}

// decryptKeyBags returns the SafeContents contents with each shrouded
// key bag replaced by the plain key bag it holds under password, and how
// many it replaced.
func decryptKeyBags(contents []byte, password string) ([]byte, int, error) {
	var bags []asn1.RawValue
	if rest, err := asn1.Unmarshal(contents, &bags); err != nil || len(rest) != 0 {
		return nil, 0, errors.New("not a PKCS12 key store, or a damaged one: a SafeContents does not decode")
	}
	n := 0
	for i, raw := range bags {
		var bag pkcs12Bag
		if _, err := asn1.Unmarshal(raw.FullBytes, &bag); err != nil {
			return nil, 0, fmt.Errorf("not a PKCS12 key store, or a damaged one: %v", err)
		}
		if !bag.ID.Equal(oidPKCS12ShroudedKeyBag) {
			continue
		}
		key, err := decryptShroudedKey(bag.Value.Bytes, password)
		if err != nil {
			return nil, 0, err
		}
		bag.ID, bag.Value = oidPKCS12KeyBag, explicitZero(key)
		if bags[i].FullBytes, err = asn1.Marshal(bag); err != nil {
			return nil, 0, err
		}
		n++
	}
	out, err := asn1.Marshal(bags)
	return out, n, err
}

// explicitZero is der as the [0] EXPLICIT field of a ContentInfo or a
// SafeBag: encoding/asn1 writes a RawValue as it is, without the field's
// tag.
func explicitZero(der []byte) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: der}
}

// decryptShroudedKey returns the PKCS#8 DER of a shrouded key bag's
// EncryptedPrivateKeyInfo, in the schemes Java's PKCS12 KeyStore writes:
// PBES2 with AES (its default), or the PKCS#12 scheme with 3DES (its
// legacy one).
func decryptShroudedKey(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) != 0 {
		return nil, errors.New("not a PKCS12 key store, or a damaged one: a key bag is not an EncryptedPrivateKeyInfo")
	}
	wrong := passwordError{fmt.Errorf("the private key of the PKCS12 key store does not decrypt with %s (or %s when that is not set): wrong password, or a damaged key", keySSLKeyPassword, keySSLKeystorePassword)}
	if !info.Algorithm.Algorithm.Equal(oidPBEWithSHAAnd3KeyDES) {
		key, err := decryptPKCS8(der, password)
		if errors.Is(err, errWrongKeyPassword) {
			return nil, wrong
		}
		return key, err
	}
	var params pkcs12PBEParams
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("the private key of the PKCS12 key store: 3DES parameters: %v", err)
	}
	if params.Iterations < 1 || params.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("the private key of the PKCS12 key store: %d iterations, want 1 to %d", params.Iterations, maxPBKDF2Iterations)
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%des.BlockSize != 0 {
		return nil, errors.New("the private key of the PKCS12 key store: the encrypted data is not whole 3DES blocks")
	}
	pw := bmpPassword(password)
	block, err := des.NewTripleDESCipher(pkcs12KDF(sha1.New, 1, pw, params.Salt, params.Iterations, 24))
	if err != nil {
		return nil, err
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, pkcs12KDF(sha1.New, 2, pw, params.Salt, params.Iterations, des.BlockSize)).CryptBlocks(plain, data)
	pad := int(plain[len(plain)-1])
	if pad == 0 || pad > des.BlockSize || !bytes.Equal(plain[len(plain)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, wrong
	}
	return plain[:len(plain)-pad], nil
}

// checkPKCS12Mac checks the store's MAC over authSafe with password and
// returns the password's encoding that made it: the empty password is
// tried both as two zero bytes and as no bytes, as writers differ.
func checkPKCS12Mac(mac pfxMacData, authSafe []byte, password string) ([]byte, error) {
	h, ok := pkcs12MacDigests[mac.Mac.Algorithm.Algorithm.String()]
	if !ok {
		return nil, fmt.Errorf("the PKCS12 key store's MAC (%s) is not one Krabka reads with a separate %s; write the store with Java's KeyStore or keytool defaults, or give the key the store password", mac.Mac.Algorithm.Algorithm, keySSLKeyPassword)
	}
	if mac.Iterations < 1 || mac.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("the PKCS12 key store's MAC has %d iterations, want 1 to %d", mac.Iterations, maxPBKDF2Iterations)
	}
	candidates := [][]byte{bmpPassword(password)}
	if password == "" {
		candidates = append(candidates, nil)
	}
	for _, pw := range candidates {
		if hmac.Equal(pkcs12Mac(h, mac, authSafe, pw), mac.Mac.Digest) {
			return pw, nil
		}
	}
	return nil, passwordError{fmt.Errorf("the PKCS12 key store does not open with %s: wrong password, or a damaged store", keySSLKeystorePassword)}
}

// passwordError: a PKCS12 key store's MAC or key did not open with its
// password.
type passwordError struct{ error }

// pkcs12Mac is the HMAC of authSafe under the key RFC 7292 derives from
// password and the MAC's salt and iterations.
func pkcs12Mac(h func() hash.Hash, mac pfxMacData, authSafe, password []byte) []byte {
	m := hmac.New(h, pkcs12KDF(h, 3, password, mac.MacSalt, mac.Iterations, h().Size()))
	m.Write(authSafe)
	return m.Sum(nil)
}

// bmpPassword is password as PKCS#12 hashes it: UTF-16 big-endian,
// ended by two zero bytes.
func bmpPassword(password string) []byte {
	var out []byte
	for _, u := range utf16.Encode([]rune(password)) {
		out = append(out, byte(u>>8), byte(u))
	}
	return append(out, 0, 0)
}

// pkcs12KDF derives size bytes for the purpose id (1: a key, 2: an IV,
// 3: a MAC key) from password and salt, as RFC 7292 appendix B.2 does.
func pkcs12KDF(h func() hash.Hash, id byte, password, salt []byte, iterations, size int) []byte {
	d := h()
	v := d.BlockSize()
	fill := func(b []byte) []byte {
		out := make([]byte, v*((len(b)+v-1)/v))
		for i := range out {
			out[i] = b[i%len(b)]
		}
		return out
	}
	in := append(fill(salt), fill(password)...)
	var out []byte
	for {
		d.Reset()
		d.Write(bytes.Repeat([]byte{id}, v))
		d.Write(in)
		a := d.Sum(nil)
		for range iterations - 1 {
			d.Reset()
			d.Write(a)
			a = d.Sum(a[:0])
		}
		if out = append(out, a...); len(out) >= size {
			return out[:size]
		}
		b := fill(a)[:v]
		for k := 0; k < len(in); k += v {
			carry := 1
			for x := v - 1; x >= 0; x-- {
				s := int(in[k+x]) + int(b[x]) + carry
				in[k+x], carry = byte(s), s>>8
			}
		}
	}
}
