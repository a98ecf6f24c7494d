package app

import (
	"context"
	"log/slog"

	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/engine"
)

// NewBrowserPool returns the pool of Chromium processes that the
// configuration asks for: DUET_CHROME_PATH and DUET_BROWSERS. It starts no
// process; the first browser step does.
func NewBrowserPool(cfg *config.Config, log *slog.Logger) *browser.Pool {
	return browser.NewPool(browser.Options{ExecPath: cfg.ChromePath, MaxBrowsers: cfg.Browsers, Logger: log})
}

// NewArtifactStore returns the artifact store of the configuration:
// DUET_ARTIFACT_DIR (default DUET_HOME/artifacts) with
// DUET_ARTIFACT_RETENTION. Instances on one PostgreSQL database share the
// directory (docs/deployment.md), so a report reads the screenshots another
// instance's worker took.
func NewArtifactStore(cfg *config.Config) *artifact.Store {
	return artifact.New(cfg.ArtifactPath(), cfg.ArtifactRetention)
}

// NewBrowser returns the engine's browser driver over a pool: each
// execution gets its own session (an isolated browser context) emulating the
// device preset it names.
func NewBrowser(p *browser.Pool) engine.Browser { return enginePool{p} }

// ValidDevice checks a device preset name ("" is the default). It returns
// INVALID_ARGUMENT naming the valid presets.
func ValidDevice(name string) error {
	_, err := browser.DeviceByName(name)
	return err
}

type enginePool struct{ p *browser.Pool }

func (a enginePool) NewSession(ctx context.Context, device string) (engine.BrowserSession, error) {
	d, err := browser.DeviceByName(device)
	if err != nil {
		return nil, err
	}
	s, err := a.p.NewSession(ctx, d)
	if err != nil {
		return nil, err
	}
	return engineSession{s}, nil
}

type engineSession struct{ *browser.Session }

func (s engineSession) WaitFor(ctx context.Context, c engine.WaitCondition) error {
	return s.Session.WaitFor(ctx, browser.WaitCondition(c))
}

func (s engineSession) Screenshot(ctx context.Context, fullPage bool) ([]byte, error) {
	if fullPage {
		return s.Session.FullScreenshot(ctx)
	}
	return s.Session.Screenshot(ctx)
}

var (
	_ engine.Browser        = enginePool{}
	_ engine.BrowserSession = engineSession{}
	_ engine.Artifacts      = (*artifact.Store)(nil)
)
