//go:build conformance

package cli

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/conformance"
)

// This file is compiled only with the conformance build tag
// (go build -tags conformance ./cmd/duet): the binary the interop and e2e
// tests start. It adds `duet serve --conformance-fixtures` and
// `duet conformance-client`; the product binary has neither, nor the
// fixtures (deps_test.go checks).

func init() {
	serveExtensions = append(serveExtensions, func() serveExtension { return &fixtures{} })
	testCommands = append(testCommands, conformanceClientCmd)
}

// fixtures mounts the conformance suite's fixtures (internal/conformance).
type fixtures struct {
	on bool
	fx *conformance.Fixtures
}

func (f *fixtures) Flags(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "conformance-fixtures", false, "mount the MCP conformance suite's fixtures; requests without credentials get a test token (test build)")
}

func (f *fixtures) Prepare(o *app.Options) {
	if !f.on {
		return
	}
	f.fx = conformance.New()
	o.ExtraTools, o.MCP = f.fx.Tools, f.fx.MCP
}

func (f *fixtures) Opened(ctx context.Context, a *app.App, so *app.ServeOptions) error {
	if !f.on {
		return nil
	}
	wrap, err := conformance.Credentials(ctx, a.Store)
	if err != nil {
		return err
	}
	so.Wrap, so.Streams = wrap, f.fx.Streams
	a.Logger.Warn("conformance fixtures mounted: requests without credentials act as " + conformance.User + " (test build)")
	return nil
}

func conformanceClientCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:    "conformance-client URL",
		Short:  "Drive the MCP conformance suite's client scenarios through Duet's client (test build)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return conformance.RunClient(cmd.Context(), env.Getenv, env.Stdout, env.Stderr, args[0])
		},
	}
}
