package recorder

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/netguard"
)

// Opener opens a browser session for device ("" the desktop default), as a
// run's case opens one: through the same driver (local Chromium, a remote
// browser, a phone) and network guard, which lets allow's destinations
// (the task's base URL) be loopback or private; close ends the session.
type Opener func(ctx context.Context, device string, allow netguard.Allowance) (s *browser.Session, close func(), err error)

// Runner runs steps of a case on the page of a live session as a run
// does, keeping nothing (the app: engine.Engine.Try with the session as
// the engine's page).
type Runner func(ctx context.Context, page *browser.Session, t engine.Tryout) (*engine.TryResult, error)

// Options configure a Manager.
type Options struct {
	Open Opener
	// Try runs the steps a tester tries (Live.Try); nil: trying steps
	// answers BROWSER_UNAVAILABLE.
	Try Runner
	// MaxPerUser bounds the sessions one user has open at a time
	// (DUET_RECORDER_SESSIONS_PER_USER; default 1).
	MaxPerUser int
	// MaxSessions bounds the sessions of the process (default 8).
	MaxSessions int
	// IdleTimeout closes a session no input reached for this long
	// (DUET_RECORDER_IDLE_TIMEOUT; default 10m).
	IdleTimeout time.Duration
	// FPS bounds the frames a second a viewer is sent (default 10).
	FPS int
	// Quality is the screencast's JPEG quality (default 60).
	Quality int
	// LocateTimeout bounds the search for one element's locator (default 10s).
	LocateTimeout time.Duration
	Logger        *slog.Logger
}

func (o Options) withDefaults() Options {
	positive(&o.MaxPerUser, 1)
	positive(&o.MaxSessions, 8)
	positive(&o.IdleTimeout, 10*time.Minute)
	positive(&o.FPS, 10)
	positive(&o.Quality, 60)
	positive(&o.LocateTimeout, 10*time.Second)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// positive sets *v to def unless it is above zero.
func positive[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Manager holds the recording sessions of a process.
type Manager struct {
	o      Options
	mu     sync.Mutex
	byID   map[string]*Live
	closed bool
}

// New returns a Manager.
func New(o Options) *Manager {
	return &Manager{o: o.withDefaults(), byID: map[string]*Live{}}
}

// Start is what a recording starts with.
type Start struct {
	Owner       string
	TaskID      string
	Environment string // the task's environment ("" its default): tried steps run in it
	BaseURL     string // the environment's base URL: the guard allows it, relative opens resolve against it
	Device      string
	TestIDAttr  string // the task's testIdAttribute ("" data-testid)
	OpenURL     string // what to open first ("" the base URL)
}

// Start opens a recording session for st.Owner and loads the first page
// (an open step). Returns RATE_LIMITED when the owner (or the process) has
// as many sessions as allowed, BROWSER_UNAVAILABLE, URL_REFUSED and the
// errors of opening a page.
func (m *Manager) Start(ctx context.Context, st Start) (*Live, error) {
	if m.o.Open == nil {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "the recorder has no browser in this process")
	}
	l := &Live{ID: duet.NewID("rec"), Owner: st.Owner, TaskID: st.TaskID, Environment: st.Environment, BaseURL: st.BaseURL, Device: st.Device, Started: time.Now(),
		m: m, testIDAttr: st.TestIDAttr, tries: engine.NewTryState(), events: make(chan func(), 256), frameSeen: make(chan struct{})}
	m.mu.Lock()
	mine := 0
	for _, o := range m.byID {
		if o.Owner == st.Owner {
			mine++
		}
	}
	switch {
	case m.closed:
		m.mu.Unlock()
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "the recorder is closed")
	case mine >= m.o.MaxPerUser:
		m.mu.Unlock()
		return nil, duet.Errorf(duet.CodeRateLimited, "you have %d recording session(s) open, the most allowed (DUET_RECORDER_SESSIONS_PER_USER): close one first", mine)
	case len(m.byID) >= m.o.MaxSessions:
		m.mu.Unlock()
		return nil, duet.Errorf(duet.CodeRateLimited, "%d recording sessions are open on this server, the most allowed: try again later", len(m.byID))
	}
	m.byID[l.ID] = l // holds the place while the browser opens
	m.mu.Unlock()
	ok := false
	defer func() {
		if !ok {
			m.mu.Lock()
			delete(m.byID, l.ID)
			m.mu.Unlock()
		}
	}()
	// The session outlives the request that starts it; the guard's
	// allowance is the task's base URL, as in a run.
	s, closeFn, err := m.o.Open(context.WithoutCancel(ctx), st.Device, netguard.AllowURL(st.BaseURL))
	if err != nil {
		return nil, err
	}
	l.s, l.closeFn = s, closeFn
	l.ctx, l.cancel = context.WithCancel(context.Background())
	go l.loop()
	fail := func(err error) (*Live, error) {
		l.Close()
		return nil, err
	}
	if err := s.Bind(ctx, world, binding, strings.ReplaceAll(script, "__BINDING__", binding), l.onBinding); err != nil {
		return fail(err)
	}
	stop, err := s.StartScreencast(ctx, m.o.Quality, l.onFrame)
	if err != nil {
		return fail(err)
	}
	l.stopCast = stop
	first := st.OpenURL
	if first == "" {
		first = "/"
	}
	if err := l.Open(ctx, first); err != nil {
		return fail(err)
	}
	ok = true
	l.mu.Lock()
	l.idle = time.AfterFunc(m.o.IdleTimeout, func() {
		m.o.Logger.Info("recorder: closing an idle session", "session", l.ID, "owner", l.Owner)
		l.Close()
	})
	l.mu.Unlock()
	m.mu.Lock()
	l.ready = true
	m.mu.Unlock()
	m.o.Logger.Info("recorder: session opened", "session", l.ID, "owner", l.Owner, "task", l.TaskID)
	return l, nil
}

// Get returns the session id of owner. Another user's session is
// NOT_FOUND, as one that does not exist: a session is its owner's alone.
func (m *Manager) Get(owner, id string) (*Live, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.byID[id]
	if l == nil || l.Owner != owner || !l.ready {
		return nil, duet.Errorf(duet.CodeNotFound, "recording session %q not found (it may have closed after being idle)", id)
	}
	return l, nil
}

// Sessions returns owner's open sessions.
func (m *Manager) Sessions(owner string) []*Live {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Live
	for _, l := range m.byID {
		if l.Owner == owner && l.ready {
			out = append(out, l)
		}
	}
	return out
}

func (m *Manager) forget(l *Live) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID[l.ID] == l {
		delete(m.byID, l.ID)
	}
}

// Close closes every session; Start fails after it.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	ls := make([]*Live, 0, len(m.byID))
	for _, l := range m.byID {
		if l.ready {
			ls = append(ls, l)
		}
	}
	m.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
}
