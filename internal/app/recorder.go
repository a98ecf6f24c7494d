package app

import (
	"github.com/duet-test/duet/internal/recorder"
)

// newRecorder returns the console's recorder over the engine's browsers.
func (a *App) newRecorder() *recorder.Manager {
	return recorder.New(recorder.Options{
		Open: a.browsers.Session, MaxPerUser: a.Config.RecorderSessionsPerUser,
		IdleTimeout: a.Config.RecorderIdleTimeout, Logger: a.Logger,
	})
}
