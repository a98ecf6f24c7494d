package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
)

func applyCmd(env Env) *cobra.Command {
	var file, baseURL string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update a task and its cases from a suite file (YAML)",
		Long: `apply compiles a suite file (see docs/suite-format.md) and creates or updates
the task it declares, owned by --as, and its cases. Re-applying an unchanged file
changes nothing. Cases no longer in the file are archived. Errors name the line
and column.`,
		Args:    cobra.NoArgs,
		PreRunE: needs(&file, "apply needs -f FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(file)
			if err != nil {
				wd, _ := os.Getwd()
				return usage("cannot read %s: %v (a relative path is relative to the current directory, %s)", file, errors.Unwrap(err), wd)
			}
			folder, err := suiteFolder(file)
			if err != nil {
				return err
			}
			defer folder.Close()
			return withClient(env, func(cmd *cobra.Command, _ []string, c client.Client) error {
				res, err := c.ApplySuite(cmd.Context(), api.ApplyIn{Source: string(src), BaseURL: baseURL, Name: file, DryRun: dryRun, Files: folder.FS()})
				if duet.ErrorCode(err) == duet.CodeInvalidArgument {
					fmt.Fprintln(env.Stderr, duet.ErrorMessage(err))
					return &exitError{1, fmt.Errorf("%s has errors; nothing was applied", file)}
				}
				if err != nil {
					return err
				}
				if dryRun {
					fmt.Fprintf(env.Stdout, "%s compiles: task %q with %d case(s); nothing applied (--dry-run)\n", file, res.Task.Name, len(res.Cases))
					return nil
				}
				if asJSON {
					return printJSON(env.Stdout, res)
				}
				fmt.Fprintf(env.Stdout, "task %s %q: %s\n", res.Task.ID, res.Task.Name, res.TaskAction)
				for _, c := range res.Cases {
					fmt.Fprintf(env.Stdout, "  case %s %q v%d: %s\n", c.ID, c.Key, c.Version, c.Action)
				}
				if !res.Changed() {
					fmt.Fprintln(env.Stdout, "nothing changed")
				}
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "suite file (YAML)")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "override the task's baseURL")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "compile and report, change nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	addAs(cmd)
	return cmd
}

// suiteFolder opens the folder of a suite file, where its upload steps
// read their files, as an os.Root: neither a path nor a symbolic link takes
// a step's file out of it (a link in a cloned repository to ~/.ssh/id_ed25519
// is refused, not uploaded to the page under test).
func suiteFolder(file string) (*os.Root, error) {
	root, err := os.OpenRoot(filepath.Dir(file))
	if err != nil {
		return nil, usage("cannot open the folder of %s: %v", file, errors.Unwrap(err))
	}
	return root, nil
}
