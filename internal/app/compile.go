package app

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
)

// CompilerOptions are the compiler's options for cases authored by user:
// mcpCall server names resolve through user's own registrations, and use:
// steps through the flow assets user may read (their own and those shared
// with them).
func (a *App) CompilerOptions(ctx context.Context, user string) compiler.Options {
	return compiler.Options{ValidDevice: a.validDevice, Servers: serverResolver{store: a.Store, user: user},
		MaxRetries: a.Config.MaxRetries, MaxParallel: a.Config.MaxParallel,
		Flows: func(ctx context.Context, ref string, version int) (*duet.Asset, error) {
			return a.Store.FindAsset(ctx, user, duet.AssetFlow, ref, version)
		}}
}

func (a *App) validDevice(name string) error {
	if a.devices == nil {
		return nil
	}
	return a.devices(name)
}
