package sample

import (
	"cmp"
	"encoding/base64"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
)

// Status is the fulfilment status of an order.
type Status string

// Order statuses.
const (
	StatusPending   Status = "pending"
	StatusPaid      Status = "paid"
	StatusShipped   Status = "shipped"
	StatusDelivered Status = "delivered"
	StatusCancelled Status = "cancelled"
)

// Statuses lists every valid status in lifecycle order.
func Statuses() []Status {
	return []Status{StatusPending, StatusPaid, StatusShipped, StatusDelivered, StatusCancelled}
}

// Valid reports whether s is one of [Statuses].
func (s Status) Valid() bool { return slices.Contains(Statuses(), s) }

// Cancellable reports whether an order in status s may still be cancelled by
// the customer (only pending and paid orders may).
func (s Status) Cancellable() bool { return s == StatusPending || s == StatusPaid }

// statusList is the human-readable list of valid statuses used in messages.
func statusList() string {
	var names []string
	for _, s := range Statuses() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// Item is one line of an order.
type Item struct {
	Name       string `json:"name" jsonschema:"product name"`
	Qty        int    `json:"qty" jsonschema:"quantity ordered, at least 1"`
	PriceCents int64  `json:"priceCents" jsonschema:"unit price in cents of the order's currency"`
}

// Order is one customer order.
type Order struct {
	ID         string    `json:"id" jsonschema:"order id, e.g. A1001"`
	Customer   string    `json:"customer" jsonschema:"customer's display name"`
	Items      []Item    `json:"items" jsonschema:"order lines"`
	TotalCents int64     `json:"totalCents" jsonschema:"sum of qty*priceCents over items, in cents"`
	Currency   string    `json:"currency" jsonschema:"ISO 4217 currency code, e.g. USD"`
	Status     Status    `json:"status" jsonschema:"one of pending, paid, shipped, delivered, cancelled"`
	UpdatedAt  time.Time `json:"updatedAt" jsonschema:"time of the last status change, RFC 3339"`
}

// clone returns a deep copy of o, so callers never share the book's slices.
func (o *Order) clone() Order {
	c := *o
	c.Items = slices.Clone(o.Items)
	if c.Items == nil {
		c.Items = []Item{}
	}
	return c
}

// OrderFilter selects orders for [Orders.List]. The zero value lists the
// first [DefaultListLimit] orders of any status.
type OrderFilter struct {
	// Status keeps only orders in this status; "" keeps all.
	Status Status
	// Limit caps the page size; 0 means DefaultListLimit and values above
	// MaxListLimit are lowered to it.
	Limit int
	// Cursor is the nextCursor of a previous page; "" starts at the first
	// order. Cursors are opaque.
	Cursor string
}

// Page sizes for [Orders.List].
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// Orders is a concurrency-safe in-memory order book. Orders are kept in id
// order. The zero value is not usable; call [NewOrders].
type Orders struct {
	mu     sync.RWMutex
	orders map[string]*Order // by id
	now    func() time.Time  // clock for UpdatedAt; time.Now outside tests
}

// NewOrders returns an order book seeded with the same five orders on every
// call, A1001 to A1005, one per status:
//
//	A1001 paid, A1002 pending, A1003 shipped, A1004 delivered, A1005 cancelled
func NewOrders() *Orders {
	day := func(d, h, m int) time.Time { return time.Date(2026, time.March, d, h, m, 0, 0, time.UTC) }
	seed := []Order{
		{ID: "A1001", Customer: "Alice Chen", Currency: "USD", Status: StatusPaid, UpdatedAt: day(2, 9, 15),
			Items: []Item{{"Wireless earbuds", 1, 4999}, {"Charging case cover", 2, 899}}},
		{ID: "A1002", Customer: "Bob Martin", Currency: "USD", Status: StatusPending, UpdatedAt: day(3, 14, 40),
			Items: []Item{{"Running shoes", 1, 8900}}},
		{ID: "A1003", Customer: "Chloé Dubois", Currency: "EUR", Status: StatusShipped, UpdatedAt: day(4, 8, 5),
			Items: []Item{{"Espresso beans 1 kg", 2, 2450}, {"Milk frother", 1, 3990}}},
		{ID: "A1004", Customer: "Daniel Kim", Currency: "USD", Status: StatusDelivered, UpdatedAt: day(5, 17, 30),
			Items: []Item{{"Yoga mat", 1, 2999}, {"Water bottle", 2, 1299}}},
		{ID: "A1005", Customer: "Eva Rossi", Currency: "EUR", Status: StatusCancelled, UpdatedAt: day(6, 11, 0),
			Items: []Item{{"Desk lamp", 1, 3450}}},
	}
	o := &Orders{orders: make(map[string]*Order, len(seed)), now: time.Now}
	for i := range seed {
		ord := &seed[i]
		for _, it := range ord.Items {
			ord.TotalCents += int64(it.Qty) * it.PriceCents
		}
		o.orders[ord.ID] = ord
	}
	return o
}

// Get returns a copy of the order with the given id.
// It returns INVALID_ARGUMENT for an empty id and NOT_FOUND for an unknown one.
func (o *Orders) Get(id string) (Order, error) {
	if id == "" {
		return Order{}, duet.Errorf(duet.CodeInvalidArgument, "orderId is required")
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	ord, ok := o.orders[id]
	if !ok {
		return Order{}, duet.Errorf(duet.CodeNotFound, "order %q not found", id)
	}
	return ord.clone(), nil
}

// List returns one page of orders in id order and the cursor of the next
// page ("" on the last page). The slice is never nil.
// It returns INVALID_ARGUMENT for an unknown status, a negative limit or a
// malformed cursor.
func (o *Orders) List(f OrderFilter) (orders []Order, nextCursor string, err error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, "", duet.Errorf(duet.CodeInvalidArgument, "invalid status %q: want one of %s", f.Status, statusList())
	}
	limit := f.Limit
	switch {
	case limit < 0:
		return nil, "", duet.Errorf(duet.CodeInvalidArgument, "invalid limit %d: want 0 to %d", limit, MaxListLimit)
	case limit == 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	after, err := decodeCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}

	o.mu.RLock()
	defer o.mu.RUnlock()
	ids := slices.SortedFunc(maps.Keys(o.orders), cmp.Compare)
	orders = []Order{}
	for _, id := range ids {
		if after != "" && id <= after {
			continue
		}
		ord := o.orders[id]
		if f.Status != "" && ord.Status != f.Status {
			continue
		}
		if len(orders) == limit {
			// At least one more order matches: hand out a cursor.
			return orders, encodeCursor(orders[len(orders)-1].ID), nil
		}
		orders = append(orders, ord.clone())
	}
	return orders, "", nil
}

// cursorPrefix keeps cursors opaque and lets decodeCursor reject strangers.
const cursorPrefix = "after:"

func encodeCursor(lastID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + lastID))
}

func decodeCursor(c string) (lastID string, err error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) || len(b) == len(cursorPrefix) {
		return "", duet.Errorf(duet.CodeInvalidArgument, "invalid cursor %q: pass nextCursor from a previous page", c)
	}
	return strings.TrimPrefix(string(b), cursorPrefix), nil
}

// SetStatus sets the status of an order and returns the updated copy and the
// previous status. Any valid status may follow any other (it is an operator's
// tool); setting the current status again changes nothing, not even
// UpdatedAt.
// It returns INVALID_ARGUMENT for an empty id or an invalid status and
// NOT_FOUND for an unknown id.
func (o *Orders) SetStatus(id string, status Status) (updated Order, previous Status, err error) {
	if !status.Valid() {
		return Order{}, "", duet.Errorf(duet.CodeInvalidArgument, "invalid status %q: want one of %s", status, statusList())
	}
	return o.update(id, func(ord *Order) error { return nil }, status)
}

// Cancel cancels a pending or paid order on the customer's behalf and returns
// the updated copy. Cancelling a cancelled order changes nothing.
// It returns INVALID_ARGUMENT for an empty id, NOT_FOUND for an unknown id and
// CONFLICT when the order has already shipped or been delivered.
func (o *Orders) Cancel(id string) (Order, error) {
	ord, _, err := o.update(id, func(ord *Order) error {
		if ord.Status != StatusCancelled && !ord.Status.Cancellable() {
			return duet.Errorf(duet.CodeConflict, "order %s is %s and can no longer be cancelled", ord.ID, ord.Status)
		}
		return nil
	}, StatusCancelled)
	return ord, err
}

// update moves order id to status if check allows it.
func (o *Orders) update(id string, check func(*Order) error, status Status) (Order, Status, error) {
	if id == "" {
		return Order{}, "", duet.Errorf(duet.CodeInvalidArgument, "orderId is required")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	ord, ok := o.orders[id]
	if !ok {
		return Order{}, "", duet.Errorf(duet.CodeNotFound, "order %q not found", id)
	}
	if err := check(ord); err != nil {
		return Order{}, "", err
	}
	previous := ord.Status
	if previous != status {
		ord.Status = status
		ord.UpdatedAt = o.now().UTC().Truncate(time.Second)
	}
	return ord.clone(), previous, nil
}
