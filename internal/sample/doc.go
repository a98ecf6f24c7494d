// Package sample holds the sample systems that Duet's tests and its
// end-to-end demo run against: an in-memory order book ([Orders]), an order
// MCP server built with the official MCP Go SDK ([NewOrderServer],
// [OrderServerHandler]) and a small mobile-first H5 shop ([ShopHandler]).
//
// The shop and the MCP server share one [Orders], so a status changed through
// the set_order_status tool shows on the shop's order page. The demo story: a
// web case opens /order?orderId=A1001 in the shop, reads orderId from the URL,
// calls the query_order tool and asserts that the page's #status equals the
// tool's structuredContent.order.status.
//
// Everything binds loopback addresses only and keeps state in memory.
package sample
