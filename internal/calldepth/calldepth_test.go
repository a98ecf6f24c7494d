package calldepth_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/calldepth"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		values []string
		want   int
		code   duet.Code
	}{
		{nil, 0, ""},
		{[]string{"0"}, 0, ""},
		{[]string{"4"}, 4, ""},
		{[]string{"5"}, 0, duet.CodeCallDepthExceeded},
		{[]string{"99999999999999999999"}, 0, duet.CodeCallDepthExceeded},
		{[]string{"-1"}, 0, duet.CodeInvalidArgument},
		{[]string{"+1"}, 0, duet.CodeInvalidArgument},
		{[]string{"1 "}, 0, duet.CodeInvalidArgument},
		{[]string{"1,2"}, 0, duet.CodeInvalidArgument},
		{[]string{""}, 0, duet.CodeInvalidArgument},
		{[]string{"0x1"}, 0, duet.CodeInvalidArgument},
		{[]string{"1", "1"}, 0, duet.CodeInvalidArgument},
	} {
		got, err := calldepth.Parse(tt.values, 4)
		if tt.code != "" {
			if duet.ErrorCode(err) != tt.code {
				t.Errorf("Parse(%q): got %d, %v, want %s", tt.values, got, err, tt.code)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q): got %d, %v, want %d", tt.values, got, err, tt.want)
		}
	}
}

// TestSet: a request carries one more than its context, whatever value it
// had (a case cannot lower it), and none is made beyond the bound.
func TestSet(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Add(calldepth.Header, "0")
	h.Add(calldepth.Header, "0")
	ctx := duet.NewContextWithCaller(context.Background(), duet.Caller{UserID: "alice", CallDepth: 2})
	if err := calldepth.Set(ctx, h, 4); err != nil || len(h.Values(calldepth.Header)) != 1 || h.Get(calldepth.Header) != "3" {
		t.Fatalf("Set at depth 2: %v %q, want one value 3", err, h.Values(calldepth.Header))
	}
	if err := calldepth.Set(context.Background(), h, 4); err != nil || h.Get(calldepth.Header) != "1" {
		t.Fatalf("Set without a caller: %v %q, want 1", err, h.Values(calldepth.Header))
	}
	deep := duet.NewContextWithCaller(context.Background(), duet.Caller{CallDepth: 4})
	h = http.Header{}
	if err := calldepth.Set(deep, h, 4); duet.ErrorCode(err) != duet.CodeCallDepthExceeded || len(h) != 0 {
		t.Fatalf("Set at the bound: %v %v, want CALL_DEPTH_EXCEEDED and no header", err, h)
	}
}
