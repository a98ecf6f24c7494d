package cli

import (
	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/config"
)

// A command a person does to tasks, cases, runs, reports, servers, assets,
// teams, tokens, audit, approvals, stop requests or devices is written
// against client.Client, never the app: in this process that is the app's
// api.Service with callSource cli (client.Local), against a Duet server
// its REST API (client.Remote, `duet --server URL` or DUET_SERVER_URL). So
// identity, validation, governance and audit are the Service's, and a
// command behaves the same in both modes. Only the commands that run Duet
// itself here (serve, worker, migrate, mcp, demo, sample, lint, config,
// conformance) or work on this machine's files (gc, vault rotate: they
// refuse a server, localOnly) open the app (openApp);
// TestCLIDoesNotTouchTheStore keeps the rest away from the store.

// withClient is the RunE of a command done through the client: it connects
// (connect) and closes the client afterwards.
func withClient(env Env, fn func(cmd *cobra.Command, args []string, c client.Client) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := connect(cmd, env)
		if err != nil {
			return err
		}
		defer c.Close()
		return fn(cmd, args, c)
	}
}

// clientCmd completes cmd, a command done through the client: fn is its
// RunE (withClient), and it takes --as, the user it acts as: a command
// done through the client cannot be written without it.
func clientCmd(env Env, cmd *cobra.Command, fn func(cmd *cobra.Command, args []string, c client.Client) error) *cobra.Command {
	cmd.RunE = withClient(env, fn)
	addAs(cmd)
	return cmd
}

// jsonCmd is clientCmd for a command that can print what it shows as
// JSON: it adds --json, and fn is told whether it was given.
func jsonCmd(env Env, cmd *cobra.Command, fn func(cmd *cobra.Command, args []string, c client.Client, asJSON bool) error) *cobra.Command {
	var asJSON bool
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return clientCmd(env, cmd, func(cmd *cobra.Command, args []string, c client.Client) error {
		return fn(cmd, args, c, asJSON)
	})
}

// connect returns the client of the command's user: the Duet server of
// --server (or DUET_SERVER_URL) with its token, else this machine's app as
// --as, DUET_USER or the operating-system user (asUser). It records whom
// the command acts as (acting).
func connect(cmd *cobra.Command, env Env) (client.Client, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, err
	}
	if server := serverURL(cmd, cfg); server != "" {
		return dialServer(cmd, env, cfg, server)
	}
	a, err := openApp(cmd, env, app.Options{})
	if err != nil {
		return nil, err
	}
	return client.NewLocal(a, asUser(cmd, a.Config)), nil
}

// serverURL is the Duet server the command acts on: --server, else
// DUET_SERVER_URL; "" is this machine.
func serverURL(cmd *cobra.Command, cfg *config.Config) string {
	if f := cmd.Flag("server"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return cfg.ServerURL
}

// localOnly refuses remote mode for a command that works on this machine
// itself (its files, its master key) rather than on what a Duet server
// keeps: with --server or DUET_SERVER_URL it is a usage error (exit 2)
// saying why and where to run it instead.
func localOnly(cmd *cobra.Command, env Env, why string) error {
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	if server := serverURL(cmd, cfg); server != "" {
		return usage("%s works on this machine, not on a Duet server (%s set): %s", cmd.CommandPath(), serverSource(cmd), why)
	}
	return nil
}

// serverSource names where the Duet server's address came from.
func serverSource(cmd *cobra.Command) string {
	if f := cmd.Flag("server"); f != nil && f.Value.String() != "" {
		return "--server"
	}
	return "DUET_SERVER_URL"
}
