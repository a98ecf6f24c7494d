package api_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
)

// TestReadOnlyTokenChangesNothing: a caller whose OAuth token may only read
// cannot set or delete a secret, or create a webhook; each refusal is
// INSUFFICIENT_SCOPE and names what it would have changed.
func TestReadOnlyTokenChangesNothing(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	svc := e.App.API
	reader := duet.Caller{UserID: "alice", Source: duet.SourceMCP, Access: duet.Access{Scoped: true, Read: true}}
	for _, c := range []struct {
		name, what string
		call       func() error
	}{
		{"SetSecret", "secrets", func() error {
			_, err := svc.SetSecret(t.Context(), reader, api.SecretIn{Name: "TOKEN", Value: "s3cret"})
			return err
		}},
		{"DeleteSecret", "secrets", func() error {
			_, err := svc.DeleteSecret(t.Context(), reader, "", "TOKEN")
			return err
		}},
		{"CreateWebhook", "a task's webhooks", func() error {
			_, err := svc.CreateWebhook(t.Context(), reader, api.WebhookIn{TaskID: "t", Name: "w", URL: "http://127.0.0.1:9/hook"})
			return err
		}},
	} {
		err := c.call()
		if duet.ErrorCode(err) != duet.CodeInsufficientScope || !strings.Contains(err.Error(), "changing "+c.what+" needs the run scope") {
			t.Errorf("%s with a read-only token: %v, want INSUFFICIENT_SCOPE about %s", c.name, err, c.what)
		}
	}
}
