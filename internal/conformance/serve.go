package conformance

import (
	"context"
	"net/http"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
)

// Credentials returns the HTTP middleware of fixture mode: the suite sends
// no credentials, so a request that carries none (no Authorization, no
// X-Api-Key) is given a personal access token of User, minted in tokens
// now. Everything behind it is the product's: the Host check, the
// authentication of that token, the governance of every call. A request
// with credentials of its own, wrong ones included, is left as it is.
func Credentials(ctx context.Context, tokens duet.TokenStore) (func(http.Handler) http.Handler, error) {
	plain, hash := auth.NewToken()
	if err := tokens.CreateToken(ctx, &duet.Token{UserID: User, Name: "conformance fixtures", Hash: hash}); err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" && r.Header.Get(auth.HeaderAPIKey) == "" {
				r = r.Clone(r.Context())
				r.Header.Set("Authorization", "Bearer "+plain)
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}
