package sample_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/sample"
)

// bearerTransport adds the demo token to every MCP request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// The demo story: open an order page of the shop, call query_order with the
// orderId from the page URL and compare the statuses.
func Example() {
	ctx := context.Background()
	token := "demo-token" // the caller picks the token; none is stored in the repo
	orders := sample.NewOrders()

	shopURL, stopShop, err := sample.StartShop(ctx, "127.0.0.1:0", orders)
	if err != nil {
		log.Fatal(err)
	}
	defer stopShop()
	mcpURL, stopMCP, err := sample.StartOrderServer(ctx, "127.0.0.1:0", orders, token)
	if err != nil {
		log.Fatal(err)
	}
	defer stopMCP()

	// What the web case sees.
	resp, err := http.Get(shopURL + "/order?orderId=A1001")
	if err != nil {
		log.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	shown := regexp.MustCompile(`<span id="status" data-status="([a-z]+)">`).FindSubmatch(page)[1]

	// What the tool says.
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "0.0.1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   mcpURL,
		HTTPClient: &http.Client{Transport: bearerTransport{token}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      sample.ToolQueryOrder,
		Arguments: map[string]any{"orderId": "A1001"},
	})
	if err != nil {
		log.Fatal(err)
	}
	order := res.StructuredContent.(map[string]any)["order"].(map[string]any)

	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	fmt.Printf("page %s, tool %s\n", shown, order["status"])
	// Output:
	// Order A1001 for Alice Chen is paid: 3 items, total $67.97, updated 2026-03-02T09:15:00Z.
	// page paid, tool paid
}
