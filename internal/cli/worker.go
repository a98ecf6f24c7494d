package cli

import (
	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/app"
)

func workerCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Execute queued runs without serving HTTP",
		Long: `worker executes queued runs (DUET_WORKERS at once) without serving HTTP: add
workers for more execution capacity on the same database (several machines on
one PostgreSQL: docs/deployment.md). On SIGTERM it claims no run and starts no
case any more: a case in flight that can resume at its next step on another
worker stops after its current step, the others get a short grace to end; the
runs not finished go back to the queue, where any worker resumes them, and it
closes the database pool.`,
		Args: cobra.NoArgs,
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, _ string) error {
			if err := a.Preflight(cmd.Context()); err != nil {
				return err
			}
			a.Logger.Info("duet worker started", "id", a.Worker.ID(), "workers", a.Config.Workers)
			defer logStopping(cmd.Context(), a.Logger, "duet worker")()
			return a.RunWorkers(cmd.Context())
		}),
	}
}
