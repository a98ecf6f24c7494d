package sample

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
)

// Tool names served by [NewOrderServer].
const (
	ToolQueryOrder     = "query_order"
	ToolSetOrderStatus = "set_order_status"
	ToolListOrders     = "list_orders"
)

// OrderScope is the only scope the order server grants and requires; it
// appears in the WWW-Authenticate header of a 401.
const OrderScope = "orders"

// ToolError is the structuredContent.error of a tool result whose isError
// is true. Its text content reads "CODE: message".
type ToolError struct {
	Code    duet.Code `json:"code" jsonschema:"stable error code, e.g. NOT_FOUND or INVALID_ARGUMENT"`
	Message string    `json:"message" jsonschema:"human-readable explanation"`
}

// QueryOrderInput is the input of the query_order tool.
type QueryOrderInput struct {
	OrderID string `json:"orderId" jsonschema:"id of the order to read, as in the shop URL's orderId parameter, e.g. A1001"`
}

// QueryOrderOutput is the structuredContent of the query_order tool.
type QueryOrderOutput struct {
	Order *Order     `json:"order,omitempty" jsonschema:"the order; absent when isError is true"`
	Error *ToolError `json:"error,omitempty" jsonschema:"why the call failed; present only when isError is true"`
}

// SetOrderStatusInput is the input of the set_order_status tool.
type SetOrderStatusInput struct {
	OrderID string `json:"orderId" jsonschema:"id of the order to change, e.g. A1001"`
	Status  Status `json:"status" jsonschema:"new status: one of pending, paid, shipped, delivered, cancelled"`
}

// SetOrderStatusOutput is the structuredContent of the set_order_status tool.
type SetOrderStatusOutput struct {
	Order          *Order     `json:"order,omitempty" jsonschema:"the order after the change; absent when isError is true"`
	PreviousStatus Status     `json:"previousStatus,omitempty" jsonschema:"status before the change; absent when isError is true"`
	Error          *ToolError `json:"error,omitempty" jsonschema:"why the call failed; present only when isError is true"`
}

// ListOrdersInput is the input of the list_orders tool. Every field is
// optional.
type ListOrdersInput struct {
	Status Status `json:"status,omitempty" jsonschema:"keep only orders in this status: pending, paid, shipped, delivered or cancelled; omit for all"`
	Limit  int    `json:"limit,omitempty" jsonschema:"page size, 1 to 100; omit for 20"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page; omit for the first page"`
}

// ListOrdersOutput is the structuredContent of the list_orders tool.
type ListOrdersOutput struct {
	Orders     []Order    `json:"orders,omitzero" jsonschema:"orders of this page in id order; present (maybe empty) unless isError is true"`
	NextCursor string     `json:"nextCursor,omitempty" jsonschema:"pass as cursor to get the next page; absent on the last page"`
	Error      *ToolError `json:"error,omitempty" jsonschema:"why the call failed; present only when isError is true"`
}

// NewOrderServer returns an MCP server over orders with three typed tools:
// query_order, set_order_status and list_orders. Their input and output
// schemas are generated from [QueryOrderInput], [QueryOrderOutput] and the
// other In/Out types. Every result carries a human-readable text content and
// structuredContent; a domain failure (unknown order, invalid status, bad
// cursor) is a result with isError set, text "CODE: message" and
// structuredContent.error.
func NewOrderServer(orders *Orders) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{
		Name:    "duet-sample-orders",
		Title:   "Sample order service",
		Version: "1.0.0",
	}, &mcp.ServerOptions{
		Instructions: "Order service of the sample H5 shop. Order ids look like A1001. " +
			"Use query_order to read one order, list_orders to browse, set_order_status to change a status.",
	})
	notOpenWorld := false
	destructive := true

	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolQueryOrder,
		Title: "Query order",
		Description: "Read one order of the sample shop by id. Returns structuredContent.order with id, customer, " +
			"items (name, qty, priceCents), totalCents, currency, status (pending|paid|shipped|delivered|cancelled) " +
			"and updatedAt. An unknown id gives isError with code NOT_FOUND.",
		Annotations: &mcp.ToolAnnotations{Title: "Query order", ReadOnlyHint: true, OpenWorldHint: &notOpenWorld},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in QueryOrderInput) (*mcp.CallToolResult, QueryOrderOutput, error) {
		ord, err := orders.Get(in.OrderID)
		if err != nil {
			res, te := toolFailure(err)
			return res, QueryOrderOutput{Error: te}, nil
		}
		return textResult(describeOrder(ord)), QueryOrderOutput{Order: &ord}, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolSetOrderStatus,
		Title: "Set order status",
		Description: "Set the status of one order (operator tool: any status may follow any other). " +
			"status must be one of pending, paid, shipped, delivered, cancelled. Returns the updated order and " +
			"previousStatus; setting the current status again changes nothing. Unknown id gives isError NOT_FOUND, " +
			"an invalid status isError INVALID_ARGUMENT. The change is visible in the shop at once.",
		Annotations: &mcp.ToolAnnotations{Title: "Set order status", DestructiveHint: &destructive,
			IdempotentHint: true, OpenWorldHint: &notOpenWorld},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in SetOrderStatusInput) (*mcp.CallToolResult, SetOrderStatusOutput, error) {
		ord, prev, err := orders.SetStatus(in.OrderID, in.Status)
		if err != nil {
			res, te := toolFailure(err)
			return res, SetOrderStatusOutput{Error: te}, nil
		}
		text := fmt.Sprintf("Order %s status changed from %s to %s.", ord.ID, prev, ord.Status)
		if prev == ord.Status {
			text = fmt.Sprintf("Order %s is already %s; nothing changed.", ord.ID, ord.Status)
		}
		return textResult(text), SetOrderStatusOutput{Order: &ord, PreviousStatus: prev}, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolListOrders,
		Title: "List orders",
		Description: "List orders of the sample shop in id order, optionally only those in one status. " +
			"Returns structuredContent.orders (full orders) and nextCursor when more pages exist; pass it back as " +
			"cursor. limit is 1 to 100 (default 20). An invalid status, limit or cursor gives isError INVALID_ARGUMENT.",
		Annotations: &mcp.ToolAnnotations{Title: "List orders", ReadOnlyHint: true, OpenWorldHint: &notOpenWorld},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in ListOrdersInput) (*mcp.CallToolResult, ListOrdersOutput, error) {
		page, next, err := orders.List(OrderFilter(in))
		if err != nil {
			res, te := toolFailure(err)
			return res, ListOrdersOutput{Error: te}, nil
		}
		return textResult(describeOrders(page, next)), ListOrdersOutput{Orders: page, NextCursor: next}, nil
	})
	return s
}

// textResult returns a successful result with one text content; the SDK adds
// structuredContent from the typed output.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// toolFailure turns a domain error into an isError result with text
// "CODE: message" and the matching structuredContent.error. Internal details
// never leave the process.
func toolFailure(err error) (*mcp.CallToolResult, *ToolError) {
	te := &ToolError{Code: duet.ErrorCode(err), Message: duet.ErrorMessage(err)}
	res := textResult(string(te.Code) + ": " + te.Message)
	res.IsError = true
	return res, te
}

// describeOrder is the human-readable summary of one order.
func describeOrder(o Order) string {
	n := 0
	for _, it := range o.Items {
		n += it.Qty
	}
	unit := "items"
	if n == 1 {
		unit = "item"
	}
	return fmt.Sprintf("Order %s for %s is %s: %d %s, total %s, updated %s.",
		o.ID, o.Customer, o.Status, n, unit, formatMoney(o.TotalCents, o.Currency), o.UpdatedAt.Format(time.RFC3339))
}

// describeOrders is the human-readable summary of a list_orders page.
func describeOrders(page []Order, next string) string {
	var b strings.Builder
	switch len(page) {
	case 0:
		b.WriteString("No orders match.")
	case 1:
		b.WriteString("1 order:")
	default:
		fmt.Fprintf(&b, "%d orders:", len(page))
	}
	for _, o := range page {
		fmt.Fprintf(&b, "\n- %s %s: %s, %s", o.ID, o.Customer, o.Status, formatMoney(o.TotalCents, o.Currency))
	}
	if next != "" {
		fmt.Fprintf(&b, "\nMore orders: call list_orders again with cursor %q.", next)
	}
	return b.String()
}

// formatMoney renders cents as "$67.97", "€88.90" or "12.00 GBP".
func formatMoney(cents int64, currency string) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	amount := fmt.Sprintf("%d.%02d", cents/100, cents%100)
	switch currency {
	case "USD":
		return sign + "$" + amount
	case "EUR":
		return sign + "€" + amount
	default:
		return sign + amount + " " + currency
	}
}

// OrderServerOption configures [OrderServerHandler], [StartOrderServer] and
// [RunOrderServer].
type OrderServerOption func(*orderServerConfig)

type orderServerConfig struct {
	stateless    bool
	jsonResponse bool
	logger       *slog.Logger
}

// WithStateless serves MCP without sessions: no Mcp-Session-Id, each POST is
// handled on its own (the 2026-07-28 sessionless protocol is then
// available). The default is stateful, with sessions, like most deployed
// servers.
func WithStateless() OrderServerOption {
	return func(c *orderServerConfig) { c.stateless = true }
}

// WithJSONResponse answers POSTs with application/json instead of an SSE
// stream (progress notifications are then dropped). The default is SSE.
func WithJSONResponse() OrderServerOption {
	return func(c *orderServerConfig) { c.jsonResponse = true }
}

// WithLogger logs transport activity to l. The default is no logging.
func WithLogger(l *slog.Logger) OrderServerOption {
	return func(c *orderServerConfig) { c.logger = l }
}

// OrderServerHandler returns an http.Handler serving [NewOrderServer] over
// Streamable HTTP at /mcp and at the root path /. It is stateful unless
// [WithStateless] is given.
//
// When token is not empty every request must carry "Authorization: Bearer
// <token>"; a missing or wrong token gets 401 with a WWW-Authenticate header
// naming the "orders" scope. The token is compared in constant time.
func OrderServerHandler(orders *Orders, token string, opts ...OrderServerOption) http.Handler {
	h, _ := orderServerHandler(orders, token, opts...)
	return h
}

// orderServerHandler also returns the *mcp.Server, so a shutdown can close
// its sessions.
func orderServerHandler(orders *Orders, token string, opts ...OrderServerOption) (http.Handler, *mcp.Server) {
	var cfg orderServerConfig
	for _, o := range opts {
		o(&cfg)
	}
	srv := NewOrderServer(orders)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{
			Stateless:    cfg.stateless,
			JSONResponse: cfg.jsonResponse,
			Logger:       cfg.logger,
		})
	if token != "" {
		h = auth.RequireBearerToken(bearerVerifier(token), &auth.RequireBearerTokenOptions{
			Scopes: []string{OrderScope},
		})(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle("/{$}", h)
	return mux, srv
}

// bearerVerifier accepts exactly want. Both sides are hashed first so the
// comparison takes the same time whatever the length of the presented token.
func bearerVerifier(want string) auth.TokenVerifier {
	wantSum := sha256.Sum256([]byte(want))
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		got := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(got[:], wantSum[:]) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{
			UserID:     "sample-operator",
			Scopes:     []string{OrderScope},
			Expiration: time.Now().Add(time.Hour), // the static token never expires; the SDK wants a time
		}, nil
	}
}
