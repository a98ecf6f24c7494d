package app

import (
	"time"

	"github.com/duet-test/duet/internal/auth"
)

// VerifierAt is a verifier of the app's identity provider whose clock reads
// now.
func VerifierAt(a *App, now time.Time) *auth.Verifier {
	return auth.NewVerifier(auth.IssuerOptions{Issuer: a.Config.OAuthIssuer, Now: func() time.Time { return now }})
}
