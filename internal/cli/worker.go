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
one PostgreSQL: docs/deployment.md). On SIGTERM it stops claiming, gives runs in
flight a short grace to finish their step, puts the rest back in the queue and
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
