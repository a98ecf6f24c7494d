package app

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/android"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/recorder"
)

// LiveSession opens a browser session of device for the console's
// recorder, through the same driver and network guard as a run's case
// (NewSession): the default pool, a remote browser, or a phone.
func (b *Browsers) LiveSession(ctx context.Context, device string) (*browser.Session, func(), error) {
	d, err := ParseDevice(device)
	if err != nil {
		return nil, nil, err
	}
	if d.Android != "" {
		if b.Android == nil {
			return nil, nil, duet.Errorf(duet.CodeBrowserUnavailable, "Android phones are not available in this process")
		}
		s, err := b.Android.NewSession(ctx, android.Prefix+d.Android)
		if err != nil {
			return nil, nil, err
		}
		return s.Session, s.Close, nil
	}
	preset, err := browser.DeviceByName(d.Preset)
	if err != nil {
		return nil, nil, err
	}
	pool := b.Default
	if d.Browser != "" {
		if pool, err = b.remote(d.Browser); err != nil {
			return nil, nil, err
		}
	}
	s, err := pool.NewSession(ctx, preset)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// LivePage is a live session's page as the engine's page, which the
// engine does not close (the session is the recorder's): for the steps a
// tester tries on it.
func LivePage(s *browser.Session) engine.BrowserSession { return engineSession{s, func() {}} }

// newRecorder returns the console's recorder over the engine's browsers;
// the steps a tester tries run on the engine (Engine.Try).
func (a *App) newRecorder() *recorder.Manager {
	return recorder.New(recorder.Options{
		Open: a.browsers.LiveSession, MaxPerUser: a.Config.RecorderSessionsPerUser,
		Try: func(ctx context.Context, s *browser.Session, t engine.Tryout) (*engine.TryResult, error) {
			t.Page = LivePage(s)
			return a.Engine.Try(ctx, t)
		},
		IdleTimeout: a.Config.RecorderIdleTimeout, Logger: a.Logger,
	})
}
