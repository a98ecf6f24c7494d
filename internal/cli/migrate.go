package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/app"
)

func migrateCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Show or apply the database's schema migrations",
		Long: `migrate shows (status) or applies (up) the schema migrations of the database
DUET_DATABASE_URL names. Every duet process applies pending migrations when it
starts (on PostgreSQL under a lock, so instances starting together migrate once);
run "duet migrate up" to migrate before rolling out a new version instead.
An instance refuses to start against a schema newer than it knows.`,
		Args: cobra.NoArgs,
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "List the migrations this duet knows and which the database has",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(env)
			if err != nil {
				return err
			}
			ms, version, err := app.MigrationStatus(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, map[string]any{"database": cfg.DatabaseDescription(), "version": version, "migrations": ms})
			}
			fmt.Fprintf(env.Stdout, "database: %s\nschema version: %d\n", cfg.DatabaseDescription(), version)
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tNAME\tSTATE\tAPPLIED AT")
			pending := 0
			for _, m := range ms {
				state, at := "pending", "-"
				if m.Applied {
					state, at = "applied", m.AppliedAt.Local().Format("2006-01-02 15:04:05")
				} else {
					pending++
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Version, m.Name, state, at)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(ms) > 0 && version > ms[len(ms)-1].Version {
				fmt.Fprintf(env.Stdout, "the database is at version %d, newer than this duet (%d): upgrade duet\n", version, ms[len(ms)-1].Version)
			} else if pending > 0 {
				fmt.Fprintf(env.Stdout, "%d pending: run `duet migrate up`\n", pending)
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	up := &cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(env)
			if err != nil {
				return err
			}
			applied, err := app.MigrateUp(cmd.Context(), cfg)
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
	cmd.AddCommand(status, up)
	return cmd
}
