package sample

import (
	"fmt"
	"html"
	"net/http"
	"sync"
)

// The shop's flaky element: what Duet's retries and flaky status are shown
// and tested on. It fails the first time and works after, deterministically
// (no randomness, no timing): the first load of the page for a key shows
// the cart service as busy, every later load works.
//
//	GET /flaky?key=K   "Quick add": #cart-state is "busy" (data-state="busy", a
//	                   #retry-hint, no #add-to-cart button) on the first load for
//	                   key K in this shop process, and "ready" with an
//	                   #add-to-cart button after; pressing it shows #added. A
//	                   suite keys it by its run (?key=${run.id}), so each run
//	                   meets the failure once: its first attempt fails, its
//	                   retry passes.
func registerFlaky(mux *http.ServeMux) {
	f := &flakyCounter{seen: map[string]bool{}}
	mux.HandleFunc("GET /flaky", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		if len(key) > 200 {
			http.Error(w, "key: at most 200 characters", http.StatusBadRequest)
			return
		}
		state, body := "ready", `<button id="add-to-cart" type="button" onclick="document.getElementById('added').hidden=false">Add to cart</button>`
		if f.first(key) {
			state, body = "busy", `<p id="retry-hint">The cart service is busy. Reload the page.</p>`
		}
		writeHTML(w, fmt.Sprintf(flakyPage, html.EscapeString(key), state, state, body))
	})
}

// flakyCounter remembers the keys seen, up to maxFlakyKeys (then it
// forgets them all: a key seen before may fail once more).
type flakyCounter struct {
	mu   sync.Mutex
	seen map[string]bool
}

const maxFlakyKeys = 10000

// first reports whether key is seen for the first time.
func (f *flakyCounter) first(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen[key] {
		return false
	}
	if len(f.seen) >= maxFlakyKeys {
		clear(f.seen)
	}
	f.seen[key] = true
	return true
}

const flakyPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Quick add · Sample Shop</title>
<style>body{font-family:system-ui,sans-serif;margin:1.5rem}#cart-state[data-state=busy]{color:#b3261e}</style></head>
<body><main data-key="%s">
<h1>Quick add</h1>
<p>Cart service: <span id="cart-state" data-state="%s">%s</span></p>
%s
<p id="added" hidden>Added to your cart.</p>
</main></body></html>
`
