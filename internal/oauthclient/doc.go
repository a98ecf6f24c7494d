// Package oauthclient is Duet's OAuth 2.1 client for the remote MCP servers
// it calls (the MCP authorization specification): it validates a
// registration's OAuth configuration ([Config]), discovers the server's
// authorization server (RFC 9728, RFC 8414), obtains access tokens there —
// the authorization code flow with PKCE through the go-sdk, the client
// credentials grant, enterprise-managed authorization (SEP-990) — binds
// them to a key when the server wants DPoP (RFC 9449), renews them, and
// keeps them, sealed by its caller, in the registration's credential
// ([Store]). A [Handler] is the go-sdk auth.OAuthHandler of every session
// to one server as one person.
//
// A pre-registered client's secret or key is bound to the issuer of the
// authorization server that issued it when it is entered, and is sent to
// no other (docs/mcp-client.md).
package oauthclient
