package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
)

// The exit codes of `duet migrate` beyond 0 (success), 1 (a failure: the
// database cannot be reached or read) and 2 (a usage or setup problem).
const (
	exitMigrationsPending = 3 // status: migrations are pending (an empty database too)
	exitSchemaTooNew      = 4 // status, up: the schema is newer than this duet
)

func migrateCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Show or apply the database's schema migrations",
		Long: `migrate shows (status) or applies (up) the schema migrations of the database
DUET_DATABASE_URL names. Every duet process applies pending migrations when it
starts (on PostgreSQL under a lock, so instances starting together migrate once);
run "duet migrate up" to migrate before rolling out a new version instead.
An instance refuses to start against a schema newer than it knows.

Exit codes:
  0  status: the schema is current; up: it is current now
  1  the database cannot be reached or read
  2  a usage or setup problem
  3  status: migrations are pending (also for an empty database)
  4  the schema is newer than this duet (SCHEMA_TOO_NEW): upgrade duet`,
		Args: cobra.NoArgs,
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "List the migrations this duet knows and which the database has (read-only)",
		Long: `status lists the migrations this duet knows and which the database has applied.
It only reads: an empty database stays empty (no version table is created), and a
SQLite file that does not exist is not created.

Exit codes: 0 the schema is current, 3 migrations are pending (an empty database
too), 4 the schema is newer than this duet (upgrade duet), 1 the database cannot
be reached or read, 2 a usage or setup problem.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(env)
			if err != nil {
				return err
			}
			ms, version, err := app.MigrationStatus(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			pending := 0
			for _, m := range ms {
				if !m.Applied {
					pending++
				}
			}
			newer := app.SchemaNewer(ms, version)
			if asJSON {
				state := "current"
				switch {
				case newer != nil:
					state = "newer"
				case pending > 0:
					state = "pending"
				}
				if err := printJSON(env.Stdout, map[string]any{"database": cfg.DatabaseDescription(), "version": version, "state": state, "pending": pending, "migrations": ms}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(env.Stdout, "database: %s\nschema version: %d\n", cfg.DatabaseDescription(), version)
				if err := printTable(env.Stdout, "VERSION\tNAME\tSTATE\tAPPLIED AT", ms, func(m app.Migration) string {
					state, at := "pending", "-"
					if m.Applied {
						state, at = "applied", m.AppliedAt.Local().Format("2006-01-02 15:04:05")
					}
					return fmt.Sprintf("%d\t%s\t%s\t%s", m.Version, m.Name, state, at)
				}); err != nil {
					return err
				}
				if newer == nil && pending > 0 {
					fmt.Fprintf(env.Stdout, "%d pending: run `duet migrate up`\n", pending)
				}
			}
			switch {
			case newer != nil:
				return &exitError{exitSchemaTooNew, newer}
			case pending > 0:
				return &exitError{exitMigrationsPending, nil}
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	up := &cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration",
		Long: `up applies every pending migration, under the lock instances starting together
also take. It refuses a schema newer than this duet: SCHEMA_TOO_NEW, exit code 4.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(env)
			if err != nil {
				return err
			}
			applied, err := app.MigrateUp(cmd.Context(), cfg)
			if duet.ErrorCode(err) == duet.CodeSchemaTooNew {
				return &exitError{exitSchemaTooNew, err}
			}
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintf(env.Stdout, "%s: the schema is current\n", cfg.DatabaseDescription())
				return nil
			}
			for _, m := range applied {
				fmt.Fprintf(env.Stdout, "applied %d %s\n", m.Version, m.Name)
			}
			return nil
		},
	}
	return group(cmd, status, up)
}
