package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/config"
)

func configCmd(env Env) *cobra.Command {
	var markdown, asJSON bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show every setting: its effective value (secrets masked) and where it came from",
		Long: `config lists every setting (each a DUET_* environment variable) with the value
this process would use and where that value came from: the environment, a file
(secrets also come from VAR_FILE), or the default. Secrets show only "(set)".
--markdown prints the table of settings with what each means
(docs/configuration.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if markdown {
				fmt.Fprint(env.Stdout, config.Document())
				return nil
			}
			cfg, err := loadConfig(env)
			if err != nil {
				return err
			}
			settings := cfg.Settings(env.Getenv)
			if asJSON {
				return printJSON(env.Stdout, settings)
			}
			if err := printTable(env.Stdout, "SETTING\tVALUE\tFROM", settings, func(s config.Setting) string {
				return fmt.Sprintf("%s\t%s\t%s", s.Env, s.Value, s.Source)
			}); err != nil {
				return err
			}
			fmt.Fprintln(env.Stdout, "what each setting means: docs/configuration.md, or `duet config --markdown`")
			return nil
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the table of every setting as Markdown")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the settings as JSON")
	return cmd
}
