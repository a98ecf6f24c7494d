package sample

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

// fixedNow is the clock of newTestOrders, so UpdatedAt is predictable.
var fixedNow = time.Date(2026, time.April, 1, 12, 0, 0, 0, time.UTC)

func newTestOrders() *Orders {
	o := NewOrders()
	o.now = func() time.Time { return fixedNow }
	return o
}

func ids(orders []Order) []string {
	out := []string{}
	for _, o := range orders {
		out = append(out, o.ID)
	}
	return out
}

func TestNewOrdersSeed(t *testing.T) {
	t.Parallel()
	o := NewOrders()
	got, next, err := o.List(OrderFilter{})
	if err != nil {
		t.Fatalf("List: got error %v, want nil", err)
	}
	if next != "" {
		t.Errorf("nextCursor: got %q, want empty", next)
	}
	wantIDs := []string{"A1001", "A1002", "A1003", "A1004", "A1005"}
	if diff := cmp.Diff(wantIDs, ids(got)); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	seen := map[Status]bool{}
	for _, ord := range got {
		var sum int64
		for _, it := range ord.Items {
			sum += int64(it.Qty) * it.PriceCents
		}
		if ord.TotalCents != sum || sum == 0 {
			t.Errorf("%s: got totalCents %d, want %d (non-zero sum of items)", ord.ID, ord.TotalCents, sum)
		}
		if !ord.Status.Valid() || ord.Customer == "" || ord.Currency == "" || ord.UpdatedAt.IsZero() {
			t.Errorf("%s: incomplete seed order %+v", ord.ID, ord)
		}
		seen[ord.Status] = true
	}
	for _, s := range Statuses() {
		if !seen[s] {
			t.Errorf("seed has no %s order, want one per status", s)
		}
	}
	// Deterministic: a second book is identical.
	again, _, _ := NewOrders().List(OrderFilter{})
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("second NewOrders differs (-first +second):\n%s", diff)
	}
}

func TestOrdersGet(t *testing.T) {
	t.Parallel()
	o := NewOrders()
	tests := []struct {
		id         string
		wantCode   duet.Code
		wantStatus Status
	}{
		{id: "A1001", wantStatus: StatusPaid},
		{id: "A1002", wantStatus: StatusPending},
		{id: "A9999", wantCode: duet.CodeNotFound},
		{id: "a1001", wantCode: duet.CodeNotFound},
		{id: "", wantCode: duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("id=%q", tt.id), func(t *testing.T) {
			t.Parallel()
			got, err := o.Get(tt.id)
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Fatalf("Get(%q): got code %q (err %v), want %q", tt.id, code, err, tt.wantCode)
			}
			if got.Status != tt.wantStatus {
				t.Errorf("Get(%q).Status: got %q, want %q", tt.id, got.Status, tt.wantStatus)
			}
		})
	}
}

func TestOrdersGetReturnsCopy(t *testing.T) {
	t.Parallel()
	o := NewOrders()
	a, _ := o.Get("A1001")
	a.Items[0].Name = "changed"
	a.Status = StatusCancelled
	b, _ := o.Get("A1001")
	if b.Items[0].Name == "changed" || b.Status != StatusPaid {
		t.Errorf("Get: got %+v after mutating a previous result, want the book unchanged", b)
	}
}

func TestOrdersList(t *testing.T) {
	t.Parallel()
	o := NewOrders()
	tests := []struct {
		name     string
		filter   OrderFilter
		wantIDs  []string
		wantNext bool
		wantCode duet.Code
	}{
		{name: "all", filter: OrderFilter{}, wantIDs: []string{"A1001", "A1002", "A1003", "A1004", "A1005"}},
		{name: "by status", filter: OrderFilter{Status: StatusShipped}, wantIDs: []string{"A1003"}},
		{name: "limit", filter: OrderFilter{Limit: 2}, wantIDs: []string{"A1001", "A1002"}, wantNext: true},
		{name: "limit equals count", filter: OrderFilter{Limit: 5}, wantIDs: []string{"A1001", "A1002", "A1003", "A1004", "A1005"}},
		{name: "limit above max", filter: OrderFilter{Limit: 1000}, wantIDs: []string{"A1001", "A1002", "A1003", "A1004", "A1005"}},
		{name: "cursor", filter: OrderFilter{Limit: 2, Cursor: encodeCursor("A1002")}, wantIDs: []string{"A1003", "A1004"}, wantNext: true},
		{name: "last page", filter: OrderFilter{Limit: 2, Cursor: encodeCursor("A1004")}, wantIDs: []string{"A1005"}},
		{name: "no match", filter: OrderFilter{Status: StatusPaid, Cursor: encodeCursor("A1001")}, wantIDs: []string{}},
		{name: "invalid status", filter: OrderFilter{Status: "lost"}, wantCode: duet.CodeInvalidArgument},
		{name: "negative limit", filter: OrderFilter{Limit: -1}, wantCode: duet.CodeInvalidArgument},
		{name: "garbage cursor", filter: OrderFilter{Cursor: "!!"}, wantCode: duet.CodeInvalidArgument},
		{name: "foreign cursor", filter: OrderFilter{Cursor: "QTEwMDI"}, wantCode: duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, next, err := o.List(tt.filter)
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Fatalf("List(%+v): got code %q (err %v), want %q", tt.filter, code, err, tt.wantCode)
			}
			if tt.wantCode != "" {
				return
			}
			if diff := cmp.Diff(tt.wantIDs, ids(got)); diff != "" {
				t.Errorf("List(%+v) ids (-want +got):\n%s", tt.filter, diff)
			}
			if (next != "") != tt.wantNext {
				t.Errorf("List(%+v): got nextCursor %q, want one: %v", tt.filter, next, tt.wantNext)
			}
		})
	}
}

func TestOrdersListFollowsCursors(t *testing.T) {
	t.Parallel()
	o := NewOrders()
	var all []string
	cursor := ""
	for range 10 {
		page, next, err := o.List(OrderFilter{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("List: got error %v, want nil", err)
		}
		all = append(all, ids(page)...)
		if next == "" {
			break
		}
		cursor = next
	}
	if diff := cmp.Diff([]string{"A1001", "A1002", "A1003", "A1004", "A1005"}, all); diff != "" {
		t.Errorf("paged ids (-want +got):\n%s", diff)
	}
}

func TestOrdersSetStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		id           string
		status       Status
		wantCode     duet.Code
		wantPrevious Status
		wantUpdated  bool
	}{
		{name: "paid to shipped", id: "A1001", status: StatusShipped, wantPrevious: StatusPaid, wantUpdated: true},
		{name: "delivered back to pending", id: "A1004", status: StatusPending, wantPrevious: StatusDelivered, wantUpdated: true},
		{name: "same status", id: "A1002", status: StatusPending, wantPrevious: StatusPending},
		{name: "invalid status", id: "A1001", status: "lost", wantCode: duet.CodeInvalidArgument},
		{name: "empty status", id: "A1001", status: "", wantCode: duet.CodeInvalidArgument},
		{name: "unknown order", id: "A9999", status: StatusPaid, wantCode: duet.CodeNotFound},
		{name: "empty id", id: "", status: StatusPaid, wantCode: duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := newTestOrders()
			before, _ := o.Get(tt.id)
			got, prev, err := o.SetStatus(tt.id, tt.status)
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Fatalf("SetStatus(%q, %q): got code %q (err %v), want %q", tt.id, tt.status, code, err, tt.wantCode)
			}
			after, _ := o.Get(tt.id)
			if tt.wantCode != "" {
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("order changed by a failed SetStatus (-before +after):\n%s", diff)
				}
				return
			}
			if prev != tt.wantPrevious {
				t.Errorf("previous: got %q, want %q", prev, tt.wantPrevious)
			}
			want := before
			want.Status = tt.status
			if tt.wantUpdated {
				want.UpdatedAt = fixedNow
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("returned order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, after); diff != "" {
				t.Errorf("stored order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOrdersCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id         string
		wantCode   duet.Code
		wantStatus Status // stored status afterwards
	}{
		{id: "A1001", wantStatus: StatusCancelled},                            // paid
		{id: "A1002", wantStatus: StatusCancelled},                            // pending
		{id: "A1003", wantCode: duet.CodeConflict, wantStatus: StatusShipped}, // shipped
		{id: "A1004", wantCode: duet.CodeConflict, wantStatus: StatusDelivered},
		{id: "A1005", wantStatus: StatusCancelled}, // already cancelled: no-op
		{id: "A9999", wantCode: duet.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			o := newTestOrders()
			_, err := o.Cancel(tt.id)
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Fatalf("Cancel(%q): got code %q (err %v), want %q", tt.id, code, err, tt.wantCode)
			}
			if got, _ := o.Get(tt.id); got.Status != tt.wantStatus {
				t.Errorf("status after Cancel(%q): got %q, want %q", tt.id, got.Status, tt.wantStatus)
			}
		})
	}
}

func TestOrdersConcurrentUse(t *testing.T) {
	t.Parallel()
	o := NewOrders()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				s := Statuses()[(i+j)%len(Statuses())]
				if _, _, err := o.SetStatus("A1001", s); err != nil {
					t.Errorf("SetStatus: got error %v, want nil", err)
				}
				if _, err := o.Get("A1001"); err != nil {
					t.Errorf("Get: got error %v, want nil", err)
				}
				if _, _, err := o.List(OrderFilter{Status: s}); err != nil {
					t.Errorf("List: got error %v, want nil", err)
				}
			}
		})
	}
	wg.Wait()
}

func FuzzDecodeCursor(f *testing.F) {
	for _, s := range []string{"", encodeCursor("A1001"), "!!", "QTEwMDI", encodeCursor("")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, c string) {
		id, err := decodeCursor(c)
		if err != nil {
			if duet.ErrorCode(err) != duet.CodeInvalidArgument {
				t.Fatalf("decodeCursor(%q): got code %q, want INVALID_ARGUMENT", c, duet.ErrorCode(err))
			}
			return
		}
		if c == "" {
			if id != "" {
				t.Fatalf("decodeCursor(\"\"): got %q, want \"\"", id)
			}
			return
		}
		if again, err := decodeCursor(encodeCursor(id)); err != nil || again != id {
			t.Fatalf("round trip of %q: got %q, %v, want %q, nil", id, again, err, id)
		}
		// Listing from any valid cursor works.
		if _, _, err := NewOrders().List(OrderFilter{Cursor: c}); err != nil {
			t.Fatalf("List with cursor %q: got error %v, want nil", c, err)
		}
	})
}
