package app

import (
	"context"

	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/recorder"
)

// LivePage is a live session's page as the engine's page, which the
// engine does not close (the session is the recorder's): for the steps a
// tester tries on it.
func LivePage(s *browser.Session) engine.BrowserSession { return engineSession{s, func() {}} }

// newRecorder returns the console's recorder over the engine's browsers
// (the same device routing as a run's case); the steps a tester tries run
// on the engine (Engine.Try).
func (a *App) newRecorder() *recorder.Manager {
	return recorder.New(recorder.Options{
		Open: a.browsers.Session, MaxPerUser: a.Config.RecorderSessionsPerUser,
		Try: func(ctx context.Context, s *browser.Session, t engine.Tryout) (*engine.TryResult, error) {
			t.Page = LivePage(s)
			return a.Engine.Try(ctx, t)
		},
		IdleTimeout: a.Config.RecorderIdleTimeout, Logger: a.Logger,
	})
}
