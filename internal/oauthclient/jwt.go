package oauthclient

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// clientKey is a private key for private_key_jwt client authentication
// (RFC 7523 section 2.2) and the JWS algorithm it signs with (go-jose, the
// library that verifies tokens too).
type clientKey struct {
	signer crypto.Signer
	alg    string // ES256, ES384, RS256 or EdDSA
}

// parseClientKey reads a PEM private key: PKCS #8, SEC 1 (EC) or PKCS #1
// (RSA); EC keys on P-256 or P-384, RSA keys of 2048 bits or more, Ed25519.
// Errors never quote the key.
func parseClientKey(pemText string) (*clientKey, error) {
	key, err := parsePEMKey(pemText)
	if err != nil {
		return nil, err
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

// parsePEMKey reads the private key of a PEM block: PKCS #8, SEC 1 (EC) or
// PKCS #1 (RSA).
func parsePEMKey(pemText string) (any, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, errors.New("the private key is not PEM (-----BEGIN PRIVATE KEY----- ...)")
	}
	parse, ok := map[string]func([]byte) (any, error){
		"PRIVATE KEY":     x509.ParsePKCS8PrivateKey,
		"EC PRIVATE KEY":  func(b []byte) (any, error) { return x509.ParseECPrivateKey(b) },
		"RSA PRIVATE KEY": func(b []byte) (any, error) { return x509.ParsePKCS1PrivateKey(b) },
	}[block.Type]
	if !ok {
		return nil, fmt.Errorf("a PEM block of type %q is not a private key", block.Type)
	}
	key, err := parse(block.Bytes)
	if err != nil {
		return nil, errors.New("the private key cannot be parsed")
	}
	return key, nil
}

// assertion returns a signed JWT that authenticates clientID to the
// authorization server audience (its issuer), valid for two minutes from
// now.
func (k *clientKey) assertion(clientID, audience string, now time.Time) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(k.alg), Key: k.signer}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	return jwt.Signed(signer).Claims(jwt.Claims{
		Issuer: clientID, Subject: clientID, Audience: jwt.Audience{audience},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(2 * time.Minute)), ID: newJTI(),
	}).Serialize()
}

// newJTI returns a fresh JWT id: 16 random bytes, base64url.
func newJTI() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
