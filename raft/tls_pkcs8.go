package raft

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
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
