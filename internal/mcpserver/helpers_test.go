package mcpserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
)

type reply struct {
	status int
	header http.Header
	body   []byte
}

// send posts body to h in process, with the headers a client sends,
// changed by headers ("" deletes one).
func send(h http.Handler, body string, headers map[string]string) reply {
	req := httptest.NewRequest("POST", "/mcp/http", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-User", "alice")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return reply{rec.Code, rec.Header(), rec.Body.Bytes()}
}

type textOut struct{ N int32 }

func (o textOut) Text() string { return fmt.Sprint(o.N) }
