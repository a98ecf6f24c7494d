package serverkey

import (
	"net/url"
	"strings"
)

// Origin is u's scheme://host:port, lower case, with the default port made
// explicit: what a credential, or a DPoP nonce, is scoped to.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}
