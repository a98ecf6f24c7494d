package mcpclient

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// clientKey is a private key for private_key_jwt client authentication
// (RFC 7523 section 2.2) and the JWS algorithm it signs with.
type clientKey struct {
	signer crypto.Signer
	alg    string // ES256, ES384, RS256 or EdDSA
}

// parseClientKey reads a PEM private key: PKCS #8, SEC 1 (EC) or PKCS #1
// (RSA); EC keys on P-256 or P-384, RSA keys of 2048 bits or more, Ed25519.
// Errors never quote the key.
func parseClientKey(pemText string) (*clientKey, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, errors.New("the private key is not PEM (-----BEGIN PRIVATE KEY----- ...)")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("a PEM block of type %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, errors.New("the private key cannot be parsed")
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return &clientKey{k, "ES256"}, nil
		case elliptic.P384():
			return &clientKey{k, "ES384"}, nil
		}
		return nil, errors.New("EC private keys must be on P-256 or P-384")
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, errors.New("RSA private keys must have at least 2048 bits")
		}
		return &clientKey{k, "RS256"}, nil
	case ed25519.PrivateKey:
		return &clientKey{k, "EdDSA"}, nil
	}
	return nil, fmt.Errorf("unsupported private key type %T", key)
}

// assertion returns a signed JWT that authenticates clientID to the
// authorization server audience (its issuer), valid for two minutes.
func (k *clientKey) assertion(clientID, audience string, now time.Time) (string, error) {
	jti := make([]byte, 16)
	rand.Read(jti)
	header, _ := json.Marshal(map[string]string{"alg": k.alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(2 * time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	})
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	sig, err := k.sign([]byte(input))
	if err != nil {
		return "", err
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

func (k *clientKey) sign(input []byte) ([]byte, error) {
	switch k.alg {
	case "ES256", "ES384":
		ek := k.signer.(*ecdsa.PrivateKey)
		var digest []byte
		size := 32
		if k.alg == "ES256" {
			d := sha256.Sum256(input)
			digest = d[:]
		} else {
			d := sha512.Sum384(input)
			digest, size = d[:], 48
		}
		r, s, err := ecdsa.Sign(rand.Reader, ek, digest)
		if err != nil {
			return nil, err
		}
		// JWS wants the fixed-size concatenation R || S, not ASN.1.
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		s.FillBytes(out[size:])
		return out, nil
	case "RS256":
		d := sha256.Sum256(input)
		return rsa.SignPKCS1v15(rand.Reader, k.signer.(*rsa.PrivateKey), crypto.SHA256, d[:])
	case "EdDSA":
		return ed25519.Sign(k.signer.(ed25519.PrivateKey), input), nil
	}
	return nil, fmt.Errorf("unsupported algorithm %s", k.alg)
}
