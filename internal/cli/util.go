package cli

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
)

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// parseSince reads a --since flag: a duration back from now (1h) or an RFC
// 3339 time; "" is no bound.
func parseSince(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, usage("--since: want a duration (1h) or an RFC 3339 time")
}

// withApp is the RunE of a command that works on the app as a user: it opens
// the app (configuration, store), passes it with the user of --as (or
// DUET_USER), and closes it afterwards.
func withApp(env Env, fn func(cmd *cobra.Command, args []string, a *app.App, user string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a, err := openApp(cmd, env, app.Options{})
		if err != nil {
			return err
		}
		defer a.Close()
		return fn(cmd, args, a, asUser(cmd, a.Config))
	}
}

// taskIDOf resolves an optional --task flag (an id or a name) to a task id;
// "" stays "".
func taskIDOf(ctx context.Context, a *app.App, user, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	t, err := a.ResolveTask(ctx, user, ref)
	if err != nil {
		return "", err
	}
	return t.ID, nil
}

func addAs(cmd *cobra.Command) {
	cmd.Flags().Var(new(userIDFlag), "as", "act as this user id (default: DUET_USER or the operating-system user)")
}

// userIDFlag is a flag holding a user id, checked by the one rule
// (duet.ValidUserID) when it is parsed.
type userIDFlag string

func (f *userIDFlag) String() string { return string(*f) }

func (f *userIDFlag) Type() string { return "user" }

func (f *userIDFlag) Set(v string) error {
	if err := duet.ValidUserID(v); err != nil {
		return errors.New(duet.ErrorMessage(err))
	}
	*f = userIDFlag(v)
	return nil
}

// auditing starts the audit record of a CLI action (method, on tool if
// any) and returns the context the action runs in and the function that
// ends the record with the action's error. The first change the action
// stores in that context writes the record in the change's own transaction
// (duet.AuditIntent): a change is never kept without its record; done
// completes it (or records it, for an action that changed nothing).
func auditing(ctx context.Context, a *app.App, user, method, tool string) (context.Context, func(error)) {
	rec := duet.AuditRecord{Time: time.Now(), TraceID: duet.NewTraceID(), CallSource: duet.SourceCLI, Caller: user, Method: method, Tool: tool}
	intent := duet.NewAuditIntent(rec)
	return duet.WithAuditIntent(ctx, intent), func(err error) {
		rec.Outcome = duet.OutcomeOK
		if err != nil {
			rec.Outcome = duet.ErrorCode(err)
		}
		rec.ID, rec.DurationUs = intent.Close(), time.Since(rec.Time).Microseconds()
		a.Audit.Record(&rec)
	}
}
