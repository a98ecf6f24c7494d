package step

import (
	"context"
	"encoding/json"
	"time"

	"github.com/duet-test/duet"
)

// Session reuse: a case signs in and saves the browser's state under a
// name (saveSession); later cases of the run start from it (session:).

// SessionKeeper is an Env that keeps the browser sessions of its run: the
// engine seals them with the master key, for the run's executor, for the
// run only.
type SessionKeeper interface {
	// SaveSession keeps state as the run's session name.
	SaveSession(ctx context.Context, name string, state []byte) error
	// LoadSession returns the run's session name; NOT_FOUND when the run
	// has none of that name (yet).
	LoadSession(ctx context.Context, name string) ([]byte, error)
}

// StorageKeeper is a Page whose storage state (cookies, localStorage) a
// case can read and set, as JSON: {cookies: [{name, value, domain, path,
// expires, httpOnly, secure, sameSite}], origins: [{origin, localStorage:
// {key: value}}]}. internal/browser's sessions are StorageKeepers.
type StorageKeeper interface {
	StorageState(ctx context.Context) ([]byte, error)
	SetStorageState(ctx context.Context, state []byte) error
}

// storageValues are the parts of a storage state that are secret.
type storageValues struct {
	Cookies []struct {
		Value string `json:"value"`
	} `json:"cookies"`
	Origins []struct {
		LocalStorage map[string]string `json:"localStorage"`
	} `json:"origins"`
}

// learnState learns the values of a storage state as the run's secrets:
// a cookie or a token is scrubbed from everything the run keeps. It
// returns how many cookies and origins the state has.
func learnState(env Env, state []byte) (cookies, origins int, err error) {
	var v storageValues
	if err := json.Unmarshal(state, &v); err != nil {
		return 0, 0, duet.WrapError(duet.CodeInternal, err, "a saved session is not a storage state: %v", err)
	}
	var secrets []string
	for _, c := range v.Cookies {
		secrets = append(secrets, c.Value)
	}
	for _, o := range v.Origins {
		for _, val := range o.LocalStorage {
			secrets = append(secrets, val)
		}
	}
	env.Secrets().Add(secrets...)
	return len(v.Cookies), len(v.Origins), nil
}

// sessionKeeper returns what keeps the run's sessions, for the session
// step st.
func sessionKeeper(env Env, st *duet.Step) (SessionKeeper, error) {
	if st.Browser == nil || st.Browser.Session == "" {
		return nil, noBody(st)
	}
	keep, ok := env.(SessionKeeper)
	if !ok {
		return nil, duet.Errorf(duet.CodeSessionNotFound, "%s: this engine keeps no browser sessions", st.Kind)
	}
	return keep, nil
}

func sessionParts(ctx context.Context, env Env, st *duet.Step) (StorageKeeper, SessionKeeper, error) {
	keep, err := sessionKeeper(env, st)
	if err != nil {
		return nil, nil, err
	}
	sk, err := pageAs[StorageKeeper](ctx, env, st, "cannot read or set its storage (its driver lacks StorageKeeper)")
	return sk, keep, err
}

// sessionKind completes k, a step whose body is a session's name (doc
// says what): saveSession and session. more, when not nil, goes on
// compiling the step once the name is read.
func sessionKind(k *Kind, doc string, more func(c *Compiler, st *duet.Step, n *Node)) *Kind {
	k.Section, k.Form = Browser, Form{Short: &Short{Type: Text, Doc: doc}}
	k.Compile = func(c *Compiler, st *duet.Step, n *Node) {
		compileSessionName(c, st, n)
		if more != nil {
			more(c, st, n)
		}
	}
	k.Title = func(st *duet.Step) string { return string(st.Kind) + " " + st.Browser.Session }
	return k
}

func compileSessionName(c *Compiler, st *duet.Step, n *Node) {
	bd, ok := browserBody(c, st, n, false)
	if !ok {
		return
	}
	if !bd.isShort {
		c.Errf(n, "%s needs the session's name: %s: admin", st.Kind, st.Kind)
		return
	}
	if err := duet.ValidSessionName(bd.short); err != nil {
		c.Errf(n, "%s", duet.ErrorMessage(err))
		return
	}
	bd.b.Session = bd.short
}

// SaveSession is the saveSession step.
var SaveSession = register(sessionKind(&Kind{
	Name:    "saveSession",
	Order:   215,
	Summary: "Save the browser's session — its cookies and the localStorage of the page's origin — under a name, for the later cases of the run to start from (`session: NAME`): sign in once per run.",
	Example: "- saveSession: admin\n",
	Doc: "A saved session is the executor's, as secret as their password: it is stored sealed (AES-256-GCM under the master key, " +
		"bound to the run, the executor and the name), only the run that saved it can use it, it expires after 12 hours, and its values " +
		"(cookies, tokens) are scrubbed from the run's results, reports and traces. A later save of the same name replaces it. " +
		"The case that saves it comes before the cases that use it (the compiler checks); with parallel cases, a case that starts from it waits (up to its step's timeout) until it is saved.",
	Agent: "`saveSession: admin` — after signing in: later cases of the run start signed in with `session: admin` (a case key)",
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		sk, keep, err := sessionParts(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		state, err := sk.StorageState(ctx)
		if err != nil {
			return "", nil, err
		}
		cookies, origins, err := learnState(env, state)
		if err != nil {
			return "", nil, err
		}
		if err := keep.SaveSession(ctx, st.Browser.Session, state); err != nil {
			return "", nil, err
		}
		return "", map[string]any{"session": st.Browser.Session, "cookies": cookies, "origins": origins}, nil
	},
}, "the session's name: letters, digits and _", func(c *Compiler, st *duet.Step, n *Node) {
	if st.Browser != nil && st.Browser.Session != "" && !c.Scope.PageOpen {
		c.Errf(n, "saveSession needs a page: add an open step (and sign in) before it")
	}
}))

// sessionPoll is how often a session step looks again for a session
// another case has not saved yet.
const sessionPoll = 250 * time.Millisecond

// UseSession is the session step: what a case's session: key runs first.
var UseSession = register(sessionKind(&Kind{
	Name:    "session",
	Order:   99,
	Summary: "Start from a browser session an earlier case of the run saved (`saveSession: NAME`): its cookies, and its localStorage for the pages of its origin. Usually written as the case's `session: NAME` key.",
	Example: "- session: admin\n",
	Doc: "The case key `session: admin` runs this step first, before the case's hooks. A session is the run's: a case of another run " +
		"(another person's, or the same person's next run) cannot use it, and one not saved (yet) fails the step with `SESSION_NOT_FOUND` " +
		"after waiting up to the step's timeout for a case running beside it to save it.",
	Agent: "`session: admin` — (a case key, or a first step) start signed in from the session an earlier case saved with `saveSession: admin`",
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		keep, err := sessionKeeper(env, st)
		if err != nil {
			return "", nil, err
		}
		name := st.Browser.Session
		notFound := duet.Errorf(duet.CodeSessionNotFound, "no case of this run saved the session %s (a case signs in and saves it with saveSession: %s, before the cases that use it); it is the run's own, and expires after 12 hours", name, name)
		// The session first, the page after: the time the step waits is
		// spent waiting for the session, not for a browser.
		var state []byte
		for {
			state, err = keep.LoadSession(ctx, name)
			if err == nil {
				break
			}
			if duet.ErrorCode(err) != duet.CodeNotFound {
				if ctx.Err() != nil {
					return "", nil, notFound // the time ran out while looking again
				}
				return "", nil, err
			}
			t := time.NewTimer(sessionPoll)
			select {
			case <-ctx.Done():
				t.Stop()
				return "", nil, notFound
			case <-t.C:
			}
		}
		sk, _, err := sessionParts(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		cookies, origins, err := learnState(env, state)
		if err != nil {
			return "", nil, err
		}
		if err := sk.SetStorageState(ctx, state); err != nil {
			return "", nil, err
		}
		return "", map[string]any{"session": name, "cookies": cookies, "origins": origins}, nil
	},
}, "the session's name", nil))
