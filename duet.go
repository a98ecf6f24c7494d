// Package duet holds Duet's domain: tasks, cases, compiled steps, runs and
// their executions, the people who own and run them, and the interfaces of the
// stores that keep them. It imports only the standard library; every other
// package depends on it, never the other way round.
//
// Duet is a self-hosted AI testing platform that is at once an MCP client
// (test cases call other teams' MCP tools as the person running them) and an
// MCP server (its tasks, cases and runs are a small, governed tool catalog).
// See docs/architecture.md for the picture of the packages.
package duet

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// CallSource says through which door a call came in. It is recorded on runs,
// audit rows and invocation records. Values are wire values: add, never rename.
type CallSource string

// Call sources.
const (
	SourceMCP     CallSource = "mcp"      // Streamable HTTP at /mcp/http
	SourceMCPLite CallSource = "mcp-lite" // the MCP-Lite REST dialect
	SourceStdio   CallSource = "stdio"    // duet mcp
	SourceCLI     CallSource = "cli"      // the duet command line
	SourceAPI     CallSource = "api"      // the REST API
	SourceWeb     CallSource = "web"      // the web UI
	SourceAgent   CallSource = "agent"    // the test agent
	SourceEngine  CallSource = "engine"   // a running test case
	SourcePostRun CallSource = "post-run" // a task's post-run action, when a run ends
	SourceOAuth   CallSource = "oauth"    // the OAuth authorization server's endpoints
)

// Caller identifies who is calling and how. UserID is the principal: the
// company employee id (or any stable user name) the call acts for.
type Caller struct {
	UserID  string
	Source  CallSource
	TraceID string
	// Access is what the caller's credentials allow (OAuth scopes); the
	// zero value allows whatever the user may do.
	Access Access
	// TokenID is the personal access token the caller authenticated with,
	// directly or through a console session started with it ("" for other
	// credentials): a token the caller creates is its child (Token).
	TokenID string
	// CallDepth is how many Duet calls deep the call is: 0 for a person's
	// request, else the Duet-Call-Depth header of the request a Duet made
	// (this one or another), or the call depth of the run that makes the
	// call. A run keeps the depth of the call that started it; Duet's own
	// outgoing calls carry CallDepth+1 (docs/governance.md, "Loop budgets").
	CallDepth int
}

type callerKey struct{}

// NewContextWithCaller returns a context carrying c.
func NewContextWithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFromContext returns the Caller stored in ctx, if any.
func CallerFromContext(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

var idState struct {
	sync.Mutex
	last [16]byte
}

// NewID returns a new identifier "<prefix>_<26 chars>": 48 bits of
// millisecond time followed by 80 random bits, like a ULID. Identifiers sort
// by creation time, strictly increasing within a process (within one
// millisecond the random part is incremented), which cursor pagination
// relies on.
func NewID(prefix string) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic("duet: crypto/rand failed: " + err.Error())
	}
	idState.Lock()
	if string(b[:6]) <= string(idState.last[:6]) {
		// Same (or an earlier) millisecond: continue from the last id.
		b = idState.last
		for i := 15; i >= 6; i-- {
			b[i]++
			if b[i] != 0 {
				break
			}
		}
	}
	idState.last = b
	idState.Unlock()
	return prefix + "_" + idEncoding.EncodeToString(b[:])
}

// NewTraceID returns a W3C trace id (32 lower-case hex digits): 48 bits of
// millisecond time followed by 80 random bits, as NewID. The right-most
// bytes are random, as W3C Trace Context level 2 asks of a random trace id;
// the time in front makes the trace ids of one period neighbours in an
// index (the audit trail's trace index grows at its end instead of
// rewriting a page of its own for each record: docs/performance.md). An
// 8-byte id cut from a trace id takes its last 16 digits.
func NewTraceID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic("duet: crypto/rand failed: " + err.Error())
	}
	const hex = "0123456789abcdef"
	var sb strings.Builder
	sb.Grow(32)
	for _, c := range b {
		sb.WriteByte(hex[c>>4])
		sb.WriteByte(hex[c&0xf])
	}
	return sb.String()
}
