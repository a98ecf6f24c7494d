package cli

import (
	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/compiler"
)

func schemaCmd(env Env) *cobra.Command {
	return group(&cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of a file format (suite)",
		Long: `schema prints the JSON Schema (draft 2020-12) of a format Duet reads, generated
from the compiler and its step kinds. Editors use it to complete and check files:
the YAML language server (VS Code, JetBrains) reads it from a comment on the first
line of a suite,
  # yaml-language-server: $schema=PATH/TO/suite.schema.json
docs/suite.schema.json holds a copy (see docs/suite-format.md).`,
	}, &cobra.Command{
		Use:   "suite",
		Short: "Print the JSON Schema of a suite file (duet apply -f FILE)",
		Long: `suite prints the JSON Schema of a suite file: the task, its cases and every step
kind with its keys. Every suite duet apply accepts is valid against it; the compiler
checks more (expressions, variables, URLs, servers) and says where, with line:col.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := env.Stdout.Write(compiler.SuiteSchemaJSON())
			return err
		},
	})
}
