package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/config"
)

func configCmd(env Env) *cobra.Command {
	var markdown bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the effective settings (secrets masked) or the settings table",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if markdown {
				fmt.Fprint(env.Stdout, config.Document())
				return nil
			}
			cfg, err := loadConfig(env)
			if err != nil {
				return err
			}
			db := cfg.DatabaseDescription()
			fmt.Fprintf(env.Stdout, "DUET_HOME=%s\ndatabase=%s\nDUET_ADDR=%s\nDUET_USER=%s\ngateway keys=%d configured\n", cfg.Home, db, cfg.Addr, cfg.User, len(cfg.GatewayAPIKeys))
			for _, o := range config.Options() {
				v := env.Getenv(o.Env)
				if v == "" {
					continue
				}
				if o.Secret {
					v = "(set)"
				}
				fmt.Fprintf(env.Stdout, "%s=%s\n", o.Env, v)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the table of every setting as Markdown")
	return cmd
}
