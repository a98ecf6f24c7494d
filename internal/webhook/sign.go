// Package webhook sends a task's events to its webhooks: JSON bodies
// signed with HMAC-SHA256 over the timestamp and the body (the
// Duet-Signature header), POSTed through the network guard, retried with
// exponential backoff up to a cap, each delivery a row of the store that an
// instance claims under a lease (a restart loses none). docs/webhooks.md
// is the receiver's side.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/vault"
)

// Headers of a delivery.
const (
	HeaderSignature = "Duet-Signature" // t=UNIX,v1=HEX: HMAC-SHA256(secret, "UNIX." + body)
	HeaderEvent     = "Duet-Event"     // run.finished, case.broken, case.changed
	HeaderDelivery  = "Duet-Delivery"  // the delivery's id: the same on every attempt (deduplicate by it)
)

// SecretPrefix starts every webhook secret.
const SecretPrefix = "whsec_"

// NewSecret returns a new signing secret: 32 random bytes, base64url.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// aad binds a sealed secret to its webhook.
func aad(webhookID string) []byte { return vault.AAD(webhookID, "webhook-secret") }

// Seal encrypts a webhook's secret under the master key (AES-256-GCM),
// bound to the webhook's id.
func Seal(kr *vault.Keyring, webhookID, secret string) ([]byte, error) {
	return kr.Seal([]byte(secret), aad(webhookID))
}

// Open decrypts a webhook's sealed secret. Returns INTERNAL when it does not
// open (another master key, or moved to another webhook).
func Open(kr *vault.Keyring, webhookID string, sealed []byte) (string, error) {
	pt, err := kr.Open(sealed, aad(webhookID))
	if err != nil {
		return "", duet.WrapError(duet.CodeInternal, err, "the secret of webhook %s cannot be decrypted: %s (rotate it)", webhookID, duet.ErrorMessage(err))
	}
	return string(pt), nil
}

// Sign returns the Duet-Signature header of body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks a Duet-Signature header against body, as a receiver does
// (docs/webhooks.md): the v1 HMAC must match, in constant time, and the
// timestamp be within tolerance of now (replays of an old delivery are
// refused).
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) bool {
	var ts string
	var sigs []string
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return false
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}
