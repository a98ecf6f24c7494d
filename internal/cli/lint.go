package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/step"
)

func lintCmd(env Env) *cobra.Command {
	var file string
	var strict bool
	cmd := &cobra.Command{
		Use:   "lint -f FILE",
		Short: "Compile a suite file and warn about steps that make tests slow or brittle",
		Long: `lint compiles a suite file as apply does (nothing is applied) and warns about
steps that run but will break or slow down for reasons that have nothing to do
with what they test:

  fixed-wait       a wait step: too long on a fast machine, too short on a slow one;
                   steps wait for their elements and assertions retry
  layout-selector  a CSS selector or XPath that finds its element by its place in the
                   page's structure (div > div:nth-child(3), body > form input,
                   //tr[2]/td[1]): name it by its role and name, label or text

Each warning names the file and the line. With --strict, warnings exit 1.`,
		Args:    cobra.NoArgs,
		PreRunE: needs(&file, "lint needs -f FILE"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := os.ReadFile(file)
			if err != nil {
				return usage("cannot read %s: %v", file, errors.Unwrap(err))
			}
			a, err := openApp(cmd, env, app.Options{})
			if err != nil {
				return err
			}
			defer a.Close()
			folder, err := suiteFolder(file)
			if err != nil {
				return err
			}
			defer folder.Close()
			opts := a.CompilerOptions(cmd.Context(), asUser(cmd, a.Config))
			opts.Files = folder.FS()
			suite, err := compiler.CompileSuite(cmd.Context(), src, file, opts)
			if err != nil {
				fmt.Fprintln(env.Stderr, duet.ErrorMessage(err))
				return &exitError{1, fmt.Errorf("%s has errors", file)}
			}
			n := 0
			for _, c := range suite.Cases {
				for _, f := range step.Lint(c.Steps) {
					n++
					fmt.Fprintf(env.Stdout, "%s:%d: %s: %s > %s: %s\n", file, f.Line, f.Rule, c.Title, f.Step, f.Message)
				}
			}
			if n == 0 {
				fmt.Fprintf(env.Stdout, "%s: no warnings\n", file)
				return nil
			}
			fmt.Fprintf(env.Stdout, "%d warning(s)\n", n)
			if strict {
				return &exitError{1, fmt.Errorf("%s has %d warning(s) (--strict)", file, n)}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "suite file (YAML)")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when there is a warning")
	addAs(cmd)
	return cmd
}
