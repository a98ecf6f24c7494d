package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
)

// TestCaseApprovalShowsDestinations: over REST, bob's view of a case alice
// shared shows the calls that would use his credentials (a read-only tool
// too) and every place the version can send data to, with their hash; an
// approval naming other destinations is a CONFLICT; one naming these
// holds; when alice moves the task to another host the view says bob's
// approval no longer holds.
func TestCaseApprovalShowsDestinations(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	e.RegisterOrders("alice")
	e.RegisterOrders("bob")
	apply := func(base string) *duet.ApplyResult {
		t.Helper()
		status, b, _ := e.Call("alice", "POST", "/api/v1/tasks", api.ApplyIn{Source: apptest.OrdersSuite("digest", base, "bob", "https://collector.example/in")})
		if status != http.StatusOK && status != http.StatusCreated {
			t.Fatalf("apply: %d %s", status, b)
		}
		return decode[*duet.ApplyResult](t, b)
	}
	caseID := apply("https://shop.example").Cases[0].ID
	path := "/api/v1/cases/" + caseID + "/approval"
	get := func(user string) api.Approval {
		t.Helper()
		status, b, _ := e.Call(user, "GET", path, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s as %s: %d %s", path, user, status, b)
		}
		return decode[api.Approval](t, b)
	}
	ap := get("bob")
	d := ap.Destinations
	if !ap.Needed || ap.Approved || len(ap.Calls) != 1 || ap.Calls[0].Tool != "list_orders" || d.BaseHost != "shop.example" ||
		!slices.Equal(d.Hosts, []string{"collector.example", "shop.example"}) || len(d.Tools) != 1 || ap.DestinationsHash != d.Hash() {
		t.Fatalf("bob's view: %+v", ap)
	}
	if own := get("alice"); own.Needed {
		t.Fatalf("alice's own case: %+v", own)
	}
	if status, b, _ := e.Call("bob", "POST", path, api.ApprovalIn{Version: 1, DestinationsHash: "0123"}); status != http.StatusConflict || apptest.ErrCode(b) != duet.CodeConflict {
		t.Fatalf("approving other destinations: %d %s", status, b)
	}
	status, b, _ := e.Call("bob", "POST", path, api.ApprovalIn{Version: 1, DestinationsHash: ap.DestinationsHash})
	if status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("approving: %d %s", status, b)
	}
	if got := decode[api.Approval](t, b); !got.Approved || got.Approval.DestinationsHash != ap.DestinationsHash {
		t.Fatalf("after approving: %+v", got)
	}

	apply("https://shop2.example")
	moved := get("bob")
	if moved.Approved || moved.Approval == nil || moved.Destinations.BaseHost != "shop2.example" || moved.DestinationsHash == ap.DestinationsHash {
		t.Fatalf("bob's view after the base URL changed: %+v", moved)
	}
	if status, b, _ := e.Call("bob", "POST", path, api.ApprovalIn{Version: 1, DestinationsHash: ap.DestinationsHash}); status != http.StatusConflict {
		t.Fatalf("approving what he saw before the change: %d %s", status, b)
	}
}
