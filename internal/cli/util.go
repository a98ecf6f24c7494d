package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/client"
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

// withApp is the RunE of a command that runs Duet itself on this machine
// (mcp, vault, worker): it opens the app, passes it with the user of --as
// (else DUET_USER, else the operating-system user), and closes it
// afterwards. A command a person does to Duet's data uses withClient.
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

// argCmd is a command that does one thing, as --as, to what its one
// argument names (remove, delete, revoke): do does it through the client,
// and done says it is done, from the user and the argument.
func argCmd(env Env, use, short string, do func(client.Client, context.Context, string) error, done func(user, arg string) string) *cobra.Command {
	return argResultCmd(env, use, short, func(c client.Client, ctx context.Context, arg string) (string, error) {
		return c.User(), do(c, ctx, arg)
	}, done)
}

// argResultCmd is argCmd for an operation that returns what it did (the
// synced server, the decided baseline): done says it is done, from that
// and the argument.
func argResultCmd[T any](env Env, use, short string, do func(client.Client, context.Context, string) (T, error), done func(v T, arg string) string) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		v, err := do(c, cmd.Context(), args[0])
		if err != nil {
			return err
		}
		fmt.Fprintln(env.Stdout, done(v, args[0]))
		return nil
	})
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

// needs is the PreRunE of a command that cannot do without a flag: msg,
// the usage error, when the flag's value (*v) is empty.
func needs(v *string, msg string) func(*cobra.Command, []string) error {
	return func(*cobra.Command, []string) error {
		if *v == "" {
			return usage("%s", msg)
		}
		return nil
	}
}

// printList prints what a list command fetched: v as JSON with --json
// (asJSON); else, when there are no rows and empty is not "", the line
// empty; else the table of rows (printTable).
func printList[T any](w io.Writer, asJSON bool, v any, rows []T, empty, header string, row func(T) string) error {
	if asJSON {
		return printJSON(w, v)
	}
	if len(rows) == 0 && empty != "" {
		fmt.Fprintln(w, empty)
		return nil
	}
	return printTable(w, header, rows, row)
}

// printTable prints a table to w: the header line, then row(r) for each of
// rows, tab-separated columns lined up two spaces apart.
func printTable[T any](w io.Writer, header string, rows []T, row func(T) string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, row(r))
	}
	return tw.Flush()
}

// group completes cmd, a command that only groups others: subs are its
// subcommands (strictUsage makes any other word after it a usage error).
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.AddCommand(subs...)
	return cmd
}
