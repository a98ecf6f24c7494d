package catalog

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
)

// Multi-round calls (MCP 2026-07-28, SEP-2322). A tool that needs something
// from the client in the middle of a call — a person's approval, a model's
// answer, the client's roots — returns Env.Ask's error instead of a result:
// the transport answers with an input-required result (the questions and a
// request state) and the client calls again with its answers and the state.
// The call runs again from the start with them (Env.Answer, Env.State).
//
// The request state is the tool's own bytes, sealed by the catalog: an HMAC
// (SHA-256, Options.StateKey) over the state, the caller's user id, the
// tool, a hash of the arguments and an expiry (Limits.InputStateTTL). A
// state that was altered, that another caller or another call presents, or
// that expired is refused (INVALID_ARGUMENT, a protocol error: ErrBadState)
// before the tool runs. Answers carry no such protection — the client gives
// them — so a tool reads them as claims of the client, and keeps in the
// state what it decided itself.

// Input request methods: what a tool may ask a client.
const (
	AskElicit  = "elicitation/create"
	AskSample  = "sampling/createMessage"
	AskListRts = "roots/list"
)

// InputRequest is one question of an input-required result: Method is one
// of the Ask* methods, Params its parameters as the protocol defines them
// (for elicitation: message and requestedSchema).
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// Input is what a transport tells the catalog about asking the client in
// the middle of a call.
type Input struct {
	// Can reports whether the client answers questions of method in this
	// call: it declared the capability, and the transport can carry the
	// question (an input-required result of the 2026-07-28 revision, or a
	// request over a handshake-era session). nil means it cannot.
	Can func(method string) bool
	// Responses are the client's answers of this round, by key (raw JSON
	// results: an elicitation's {action, content}, ...).
	Responses map[string]json.RawMessage
	// State is the request state of the previous round as the client sent
	// it back: sealed, checked by Call. "" on the first round.
	State string
}

// ErrBadState is returned by Call (wrapped, coded INVALID_ARGUMENT) for a
// request state that fails its check: a protocol error, the tool did not
// run.
var ErrBadState = errors.New("invalid requestState")

// inputRequired is the error a tool returns to ask the client.
type inputRequired struct {
	requests map[string]InputRequest
	state    []byte
}

func (e *inputRequired) Error() string { return "the call needs input from the client" }

// CanAsk reports whether the client of this call can be asked questions of
// method (Ask* constants) before the call answers.
func (e *Env) CanAsk(method string) bool {
	return e.input != nil && e.input.Can != nil && e.input.Can(method)
}

// Ask returns the error by which a tool asks the client the questions in
// requests (by keys the tool chooses) and ends this round; state (may be
// nil) comes back, sealed and checked, in the next round's Env.State. Ask
// the client only what CanAsk allows; Ask with no question, or when the
// client cannot be asked at all (Input or Input.Can nil), returns
// UNAVAILABLE.
func (e *Env) Ask(requests map[string]InputRequest, state []byte) error {
	if e.input == nil || e.input.Can == nil || len(requests) == 0 {
		return duet.Errorf(duet.CodeUnavailable, "this client cannot be asked for input during a call")
	}
	return &inputRequired{requests: requests, state: state}
}

// Answer decodes the client's answer under key into v and reports whether
// there was one.
func (e *Env) Answer(key string, v any) bool {
	if e.input == nil {
		return false
	}
	raw, ok := e.input.Responses[key]
	if !ok || json.Unmarshal(raw, v) != nil {
		return false
	}
	return true
}

// Answered reports whether the client sent any answer in this round.
func (e *Env) Answered() bool { return e.input != nil && len(e.input.Responses) > 0 }

// State returns the state the tool handed Ask in the previous round, after
// its seal was checked; nil on the first round.
func (e *Env) State() []byte { return e.state }

// Elicitation is the answer to an elicitation/create question.
type Elicitation struct {
	Action  string         `json:"action"` // accept, decline or cancel
	Content map[string]any `json:"content,omitempty"`
}

// sealedState is what a request state seals.
type sealedState struct {
	User    string `json:"u"`
	Tool    string `json:"t"`
	Args    string `json:"a"` // base64 SHA-256 of the arguments
	Expires int64  `json:"e"` // unix seconds
	State   []byte `json:"s,omitempty"`
}

// sealer seals and opens request states.
type sealer struct {
	ttl time.Duration
	now func() time.Time

	once   sync.Once
	source func() ([]byte, error)
	log    *slog.Logger
	key    []byte
}

func newSealer(source func() ([]byte, error), ttl time.Duration, now func() time.Time, log *slog.Logger) *sealer {
	return &sealer{source: source, ttl: ttl, now: now, log: log}
}

// theKey is the sealing key, asked of the source at the first use.
func (s *sealer) theKey() []byte {
	s.once.Do(func() {
		if s.source != nil {
			key, err := s.source()
			if err == nil && len(key) >= 16 {
				s.key = key
				return
			}
			s.log.Warn("no shared key for the request state of multi-round calls: using one of this process "+
				"(a second round that reaches another instance is refused, and the client starts over)", "err", err)
		}
		s.key = make([]byte, 32)
		rand.Read(s.key)
	})
	return s.key
}

func argsDigest(args json.RawMessage) string {
	h := sha256.Sum256(args)
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func (s *sealer) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, s.theKey())
	m.Write([]byte("duet request state v1\x00"))
	m.Write(payload)
	return m.Sum(nil)
}

// seal returns the request state for state, bound to user, tool and args.
func (s *sealer) seal(user, tool string, args json.RawMessage, state []byte) (string, error) {
	payload, err := json.Marshal(sealedState{User: user, Tool: tool, Args: argsDigest(args), Expires: s.now().Add(s.ttl).Unix(), State: state})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(s.mac(payload)), nil
}

// open checks a request state and returns the tool's state. Returns
// ErrBadState (coded INVALID_ARGUMENT).
func (s *sealer) open(sealed, user, tool string, args json.RawMessage) ([]byte, error) {
	bad := func(why string) error {
		return &duet.Error{Code: duet.CodeInvalidArgument, Message: "invalid requestState: " + why, Err: ErrBadState}
	}
	p64, m64, ok := strings.Cut(sealed, ".")
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p64)
	mac, err2 := enc.DecodeString(m64)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, s.mac(payload)) {
		return nil, bad("it is not a state this server issued, or it was altered")
	}
	var st sealedState
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, bad("malformed")
	}
	switch {
	case st.User != user || st.Tool != tool:
		return nil, bad("it was issued to another caller or for another tool")
	case st.Args != argsDigest(args):
		return nil, bad("it was issued for other arguments")
	case s.now().Unix() > st.Expires:
		return nil, bad(fmt.Sprintf("it expired (states live %s): call again from the start", s.ttl))
	}
	if st.State == nil {
		st.State = []byte{}
	}
	return st.State, nil
}

// canonicalArgs is the form of a call's arguments the seal binds: the same
// arguments sent in another key order or spacing bind alike.
func canonicalArgs(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	if v == nil {
		return json.RawMessage("{}")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}
