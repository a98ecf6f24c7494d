package sample

import (
	"embed"
	"net/http"
	"strings"
)

// The lab: pages of the sample shop that exercise what a test does in a
// browser — a form with labels, placeholders, checkboxes and an upload, a
// table, elements that appear late, move or are covered for a while,
// dialogs, an iframe, popups, drag and drop, and a page that shows what
// the browser says of the device. examples/lab.yaml tests them all.
//
//	GET /lab/            the index
//	GET /lab/form        a checkout form (labels, placeholders, a search that suggests, checkboxes, upload, a button enabled late)
//	GET /lab/table       an orders table (Details per row, double-click to rename, a context menu, a menu that opens on hover)
//	GET /lab/late        a button that appears late, one covered by a toast for a while, a panel that slides in, "Load more" far below
//	GET /lab/dialogs     confirm, prompt and alert
//	GET /lab/frames      an iframe (/lab/card) with a card form
//	GET /lab/popup       a link that opens a tab, a button that opens a window
//	GET /lab/dnd         drag and drop into a wish list
//	GET /lab/device      the viewport, time zone, language, theme and position the page sees
//	GET /lab/live        orders fetched from /api/orders and rendered: the list, an empty state, an error with its status, a failed network (a test mocks the API)
//	GET /lab/reviews     a product page whose reviews hold an instruction to an AI (a prompt injection, for the AI steps)
//	GET /lab/store       headphones to add to a cart, a cart that opens, a newsletter field, a link off the site (for the acting AI steps)
//
//go:embed lab/*.html lab/*.css
var labFS embed.FS

// registerLab adds the lab's pages to the shop's mux.
func registerLab(mux *http.ServeMux) {
	mux.HandleFunc("GET /lab/{page...}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("page")
		typ := "text/html; charset=utf-8"
		switch {
		case name == "":
			name = "index.html"
		case name == "style.css":
			typ = "text/css; charset=utf-8"
		case strings.ContainsAny(name, "./"):
			http.NotFound(w, r)
			return
		default:
			name += ".html"
		}
		b, err := labFS.ReadFile("lab/" + name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", typ)
		_, _ = w.Write(b)
	})
}
