package oauthclient

import "github.com/modelcontextprotocol/go-sdk/oauthex"

// registrationMetadata is how Duet describes itself when it registers with
// an authorization server dynamically (RFC 7591): the name a person sees on
// the consent page, the loopback redirect URI, and the grants it uses
// (refresh_token too, SEP-2207). (Its own file: the interop test that looks
// for branches on a calling client's name would take this ClientName, Duet's
// own, for one.)
func registrationMetadata(redirectURL string) *oauthex.ClientRegistrationMetadata {
	return &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirectURL}, ClientName: "Duet", SoftwareID: "duet",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}
}
