// Package calldepth carries how deep a call is in a chain of calls between
// Duets — the Duet-Call-Depth header — so that no loop through Duet grows
// without end: a case whose MCP call starts a run of its own task through
// Duet's MCP endpoint (behind a proxy that hides the address), or Duet A
// whose run calls Duet B whose run calls A.
//
// A person's request has depth 0. Duet sets the header on every request it
// sends for a call — MCP calls to registered servers and http steps — to
// the depth of the call's context plus one (duet.Caller.CallDepth; a run's
// steps have the depth of the call that started the run). An incoming
// request's header gives its depth, and a run it starts keeps it. A request
// deeper than the maximum is refused on the way in, and a call that would
// be is refused on the way out, with CALL_DEPTH_EXCEEDED.
package calldepth

import (
	"context"
	"net/http"
	"strconv"

	"github.com/duet-test/duet"
)

// Header is the name of the header that carries the depth.
const Header = "Duet-Call-Depth"

// DefaultMax is the deepest call allowed when none is configured
// (DUET_MAX_CALL_DEPTH): a chain of four Duet calls.
const DefaultMax = 4

// Parse reads the depth of an incoming request from the values of its
// Header: none is depth 0; one value must be a decimal number. Returns
// INVALID_ARGUMENT for several values or one that is not a number, and
// CALL_DEPTH_EXCEEDED for a depth beyond max.
func Parse(values []string, max int) (int, error) {
	switch len(values) {
	case 0:
		return 0, nil
	case 1:
	default:
		return 0, duet.Errorf(duet.CodeInvalidArgument, "the request carries %d %s headers; send one", len(values), Header)
	}
	v := values[0]
	if v == "" || len(v) > 20 {
		return 0, duet.Errorf(duet.CodeInvalidArgument, "the %s header is not a number of calls", Header)
	}
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return 0, duet.Errorf(duet.CodeInvalidArgument, "the %s header is not a number of calls", Header)
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > max {
		return 0, exceeded(v, max)
	}
	return n, nil
}

func exceeded(depth string, max int) error {
	return duet.Errorf(duet.CodeCallDepthExceeded, "this call is %s calls deep in a chain of Duet calls (a run calling Duet, whose run calls Duet, ...); at most %d are allowed (DUET_MAX_CALL_DEPTH), so a loop stops here",
		depth, max)
}

// Of returns the call depth of ctx: that of its duet.Caller, else 0.
func Of(ctx context.Context) int {
	c, _ := duet.CallerFromContext(ctx)
	return c.CallDepth
}

// Next returns the depth of a call made from ctx, Of(ctx)+1, or
// CALL_DEPTH_EXCEEDED when it is beyond max.
func Next(ctx context.Context, max int) (int, error) {
	d := Of(ctx) + 1
	if d > max {
		return 0, exceeded(strconv.Itoa(d), max)
	}
	return d, nil
}

// Set sets Header on h to the depth of a call made from ctx (Next), in place
// of any value h has: a case cannot choose the depth its requests carry.
// Returns CALL_DEPTH_EXCEEDED, leaving h unchanged, beyond max.
func Set(ctx context.Context, h http.Header, max int) error {
	d, err := Next(ctx, max)
	if err != nil {
		return err
	}
	h[Header] = []string{strconv.Itoa(d)}
	return nil
}
