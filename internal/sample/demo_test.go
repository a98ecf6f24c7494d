package sample

import (
	"context"
	"net/http"
	"net/url"
	"testing"
)

// startDemo starts the shop and the order MCP server over one order book,
// as the end-to-end demo does, and returns the shop's base URL and the MCP
// URL.
func startDemo(t *testing.T, orders *Orders) (shopURL, mcpURL string) {
	t.Helper()
	shopURL, stop, err := StartShop(context.Background(), "127.0.0.1:0", orders)
	if err != nil {
		t.Fatalf("StartShop: got error %v, want nil", err)
	}
	t.Cleanup(stop)
	return shopURL, startOrderServer(t, orders, testToken)
}

// TestDemoStory is the demo's web case without a browser: open the order
// page, take orderId from the page URL, call query_order and compare the
// page's #status with the tool's status.
func TestDemoStory(t *testing.T) {
	t.Parallel()
	orders := NewOrders()
	shopURL, mcpURL := startDemo(t, orders)
	cs := connect(t, mcpURL, testToken)

	list, _, _ := orders.List(OrderFilter{})
	for _, ord := range list {
		t.Run(ord.ID, func(t *testing.T) {
			t.Parallel()
			pageURL := shopURL + "/order?orderId=" + url.QueryEscape(ord.ID)
			_, body := fetch(t, http.DefaultClient, "GET", pageURL, nil)
			shown := pageStatus(t, body)

			u, err := url.Parse(pageURL)
			if err != nil {
				t.Fatal(err)
			}
			var q QueryOrderOutput
			res := call(t, cs, ToolQueryOrder, map[string]any{"orderId": u.Query().Get("orderId")}, &q)
			if res.IsError || q.Order == nil {
				t.Fatalf("query_order %s: got isError %v (%q), want the order", ord.ID, res.IsError, text(res))
			}
			if shown != q.Order.Status {
				t.Errorf("%s: page #status %q, tool status %q, want equal", ord.ID, shown, q.Order.Status)
			}
		})
	}
}

// TestDemoSharedOrders checks that both systems see each other's changes.
func TestDemoSharedOrders(t *testing.T) {
	t.Parallel()
	orders := NewOrders()
	shopURL, mcpURL := startDemo(t, orders)
	cs := connect(t, mcpURL, testToken)

	steps := []struct {
		name string
		do   func(t *testing.T)
		id   string
		want Status
	}{
		{name: "tool ships A1001", id: "A1001", want: StatusShipped, do: func(t *testing.T) {
			if res := call(t, cs, ToolSetOrderStatus, map[string]any{"orderId": "A1001", "status": "shipped"}, nil); res.IsError {
				t.Fatalf("set_order_status: got isError %q, want success", text(res))
			}
		}},
		{name: "shop cancels A1002", id: "A1002", want: StatusCancelled, do: func(t *testing.T) {
			if resp, body := fetch(t, http.DefaultClient, "POST", shopURL+"/api/orders/A1002/cancel", nil); resp.StatusCode != 200 {
				t.Fatalf("POST cancel: got %d %s, want 200", resp.StatusCode, body)
			}
		}},
		{name: "tool reopens A1002", id: "A1002", want: StatusPending, do: func(t *testing.T) {
			if res := call(t, cs, ToolSetOrderStatus, map[string]any{"orderId": "A1002", "status": "pending"}, nil); res.IsError {
				t.Fatalf("set_order_status: got isError %q, want success", text(res))
			}
		}},
	}
	// Sequential: each step builds on the previous state.
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			_, page := fetch(t, http.DefaultClient, "GET", shopURL+"/order?orderId="+st.id, nil)
			if got := pageStatus(t, page); got != st.want {
				t.Errorf("shop page #status: got %q, want %q", got, st.want)
			}
			var q QueryOrderOutput
			call(t, cs, ToolQueryOrder, map[string]any{"orderId": st.id}, &q)
			if q.Order == nil || q.Order.Status != st.want {
				t.Errorf("query_order: got %+v, want status %q", q.Order, st.want)
			}
		})
	}
}
