package oauthserver

import (
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Metadata is the server's RFC 8414 metadata.
func (s *Server) Metadata() *oauthex.AuthServerMeta {
	m := &oauthex.AuthServerMeta{
		Issuer:                                     s.o.Issuer,
		AuthorizationEndpoint:                      s.o.Issuer + PathAuthorize,
		TokenEndpoint:                              s.o.Issuer + PathToken,
		RegistrationEndpoint:                       s.o.Issuer + PathRegister,
		RevocationEndpoint:                         s.o.Issuer + PathRevoke,
		ScopesSupported:                            append(s.o.Scopes.All(), "offline_access"),
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token", GrantJWTBearer},
		TokenEndpointAuthMethodsSupported:          []string{"none", "client_secret_basic", "client_secret_post"},
		RevocationEndpointAuthMethodsSupported:     []string{"none", "client_secret_basic", "client_secret_post"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		ClientIDMetadataDocumentSupported:          s.o.MetadataClient != nil,
		AuthorizationResponseIssParameterSupported: true,
	}
	return m
}

func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, served(s.Metadata()))
}

// served is metadata as the server publishes it: a field it does not serve
// (an empty URL or list, a false flag, null) is left out rather than sent
// empty — the go-sdk's struct writes "jwks_uri": "" although this server
// has no key set, and a client would take "" for an address.
func served(m *oauthex.AuthServerMeta) map[string]any {
	b, _ := json.Marshal(m)
	var fields map[string]any
	json.Unmarshal(b, &fields)
	for k, v := range fields {
		switch v := v.(type) {
		case nil:
			delete(fields, k)
		case string:
			if v == "" {
				delete(fields, k)
			}
		case bool:
			if !v {
				delete(fields, k)
			}
		case []any:
			if len(v) == 0 {
				delete(fields, k)
			}
		}
	}
	return fields
}
