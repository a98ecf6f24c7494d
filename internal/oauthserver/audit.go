package oauthserver

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// event is what one request to the server leaves in the audit trail; the
// handlers fill it in as they learn who and which client it concerns.
type event struct {
	user, client, grant string
	oauthCode           string // the RFC 6749 error answered, if any
	status              int
}

type eventKey struct{}

// eventOf returns the request's event (a throwaway one outside audited).
func eventOf(ctx context.Context) *event {
	if ev, ok := ctx.Value(eventKey{}).(*event); ok {
		return ev
	}
	return &event{}
}

// auditWriter notes the status a handler answered.
type auditWriter struct {
	http.ResponseWriter
	ev *event
}

func (w *auditWriter) WriteHeader(status int) {
	if w.ev.status == 0 {
		w.ev.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	if w.ev.status == 0 {
		w.ev.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// noteError records the OAuth error a handler answered through w.
func noteError(w http.ResponseWriter, code string) {
	if aw, ok := w.(*auditWriter); ok && aw.ev.oauthCode == "" {
		aw.ev.oauthCode = code
	}
}

// audited runs h and leaves one audit record of the request: call source
// oauth, the user it concerned once known, the client as the record's
// tool, the outcome as a stable code.
// A change the request makes (a client registered, a code or a token
// issued, a token revoked) stores the record in its own transaction, as a
// governed call's does (duet.AuditIntent); it is completed at the end.
func (s *Server) audited(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ev := &event{}
		caller, _ := duet.CallerFromContext(r.Context())
		trace := caller.TraceID
		if trace == "" {
			trace = duet.NewTraceID()
		}
		record := func() duet.AuditRecord {
			m := method
			if ev.grant != "" {
				m += ":" + ev.grant
			}
			return duet.AuditRecord{Time: start, TraceID: trace, CallSource: duet.SourceOAuth, Caller: clip(ev.user), Method: m,
				Tool: clip(ev.client), ArgBytes: int(max(r.ContentLength, 0))}
		}
		ctx := context.WithValue(r.Context(), eventKey{}, ev)
		var intent *duet.AuditIntent
		if s.o.Audit != nil {
			intent = duet.NewAuditIntentFunc(record)
			ctx = duet.WithAuditIntent(ctx, intent)
		}
		h(&auditWriter{ResponseWriter: w, ev: ev}, r.WithContext(ctx))
		if s.o.Audit == nil {
			return
		}
		rec := record()
		rec.ID, rec.Outcome, rec.DurationUs = intent.Close(), outcome(ev), time.Since(start).Microseconds()
		s.o.Audit(&rec)
	}
}

// outcome maps what the server answered to the stable code of the audit
// trail.
func outcome(ev *event) duet.Code {
	switch ev.oauthCode {
	case "":
		switch {
		case ev.status < 400:
			return duet.OutcomeOK
		case ev.status == http.StatusRequestEntityTooLarge:
			return duet.CodeTooLarge
		case ev.status == http.StatusTooManyRequests:
			return duet.CodeRateLimited
		case ev.status == http.StatusForbidden:
			return duet.CodePermissionDenied
		case ev.status == http.StatusServiceUnavailable || ev.status == http.StatusBadGateway:
			return duet.CodeUnavailable
		case ev.status >= 500:
			return duet.CodeInternal
		}
		return duet.CodeInvalidArgument
	case "invalid_client":
		return duet.CodeUnauthenticated
	case "invalid_grant", "unauthorized_client", "access_denied":
		return duet.CodePermissionDenied
	case "temporarily_unavailable":
		if ev.status == http.StatusTooManyRequests {
			return duet.CodeRateLimited
		}
		return duet.CodeUnavailable
	case "server_error":
		return duet.CodeInternal
	}
	if ev.status == http.StatusRequestEntityTooLarge {
		return duet.CodeTooLarge
	}
	return duet.CodeInvalidArgument
}

// clip bounds a value a client chose before it is kept: at most 200
// bytes of valid UTF-8.
func clip(v string) string {
	if len(v) > 200 {
		v = v[:200]
	}
	return strings.ToValidUTF8(v, "")
}
