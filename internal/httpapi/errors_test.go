package httpapi

import (
	"testing"

	"github.com/duet-test/duet"
)

func TestEveryCodeHasARow(t *testing.T) {
	t.Parallel()
	for _, c := range duet.Codes() {
		if _, ok := codes[c]; !ok {
			t.Errorf("code %s has no row in the status table", c)
		}
	}
	if len(codes) != len(duet.Codes()) {
		t.Errorf("the table has %d rows for %d codes", len(codes), len(duet.Codes()))
	}
}

func TestApprovalRequiredIsForbidden(t *testing.T) {
	t.Parallel()
	if got, rpc := StatusOf(duet.CodeApprovalRequired), RPCCodeOf(duet.CodeApprovalRequired); got != 403 || rpc != -32003 {
		t.Errorf("APPROVAL_REQUIRED: got HTTP %d, JSON-RPC %d; want 403, -32003 (like PERMISSION_DENIED)", got, rpc)
	}
}

func TestStopApprovalCodes(t *testing.T) {
	t.Parallel()
	for code, want := range map[duet.Code]int{duet.CodeApprovalPending: 403, duet.CodeApprovalDenied: 403, duet.CodeApprovalExpired: 410} {
		if got, rpc := StatusOf(code), RPCCodeOf(code); got != want || rpc != -32003 {
			t.Errorf("%s: got HTTP %d, JSON-RPC %d; want %d, -32003", code, got, rpc, want)
		}
	}
}
