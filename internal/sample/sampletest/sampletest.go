// Package sampletest starts the sample systems of package sample for tests:
// each on a loopback port of its own, stopped when the test ends.
package sampletest

import (
	"context"
	"testing"

	"github.com/duet-test/duet/internal/sample"
)

// Shop starts the sample shop, with a new set of sample orders, for the
// test and returns its URL.
func Shop(tb testing.TB) string {
	tb.Helper()
	url, stop, err := sample.StartShop(context.Background(), "127.0.0.1:0", sample.NewOrders())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return url
}
