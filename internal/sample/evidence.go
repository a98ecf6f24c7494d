package sample

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The shop's evidence pages: what Duet's traces, visual comparison,
// accessibility and page-speed checks are shown and tested on.
//
//	GET /evidence/orders              "Recent orders": the list, loaded by the page from
//	                                  /api/evidence/orders; ?fail=api makes that API answer
//	                                  500, which the page logs with console.error and shows
//	                                  in #load-error
//	GET /api/evidence/orders?fail=1   the orders as JSON, or 500 with ?fail
//	GET /evidence/banner?variant=b    a promotion banner (#banner) beside a live clock
//	                                  (#clock, a region to mask) and a spinning badge
//	                                  (#spinner, a CSS animation); variant b is another colour
//	                                  and text: a visual change
//	POST /evidence/banner?variant=b   makes b (or a) the banner of later requests without
//	                                  ?variant: a new design deployed
//	GET /evidence/a11y                a page with planted accessibility defects: an image
//	                                  without alt text (#logo), a button without a name
//	                                  (#icon-button) and grey-on-white text (#faint)
//	GET /evidence/a11y?fixed=1        the same page without them
//	GET /evidence/speed?delay=MS      a page whose hero image (#hero) comes MS ms late and
//	                                  whose banner is pushed in above the text after
//	                                  loading: LCP and layout shift to measure
func registerEvidence(mux *http.ServeMux, orders *Orders) {
	mux.HandleFunc("GET /evidence/orders", func(w http.ResponseWriter, r *http.Request) {
		api := "/api/evidence/orders"
		if r.URL.Query().Get("fail") == "api" {
			api += "?fail=1"
		}
		writeHTML(w, fmt.Sprintf(evidenceOrdersPage, api))
	})
	mux.HandleFunc("GET /api/evidence/orders", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Has("fail") {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"code":"INTERNAL","message":"the order database is down"}}`)
			return
		}
		list, _, err := orders.List(OrderFilter{Limit: 10})
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":{"code":"INTERNAL","message":%q}}`, err.Error())
			return
		}
		fmt.Fprint(w, `{"orders":[`)
		for i, o := range list {
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, `{"id":%q,"status":%q}`, o.ID, o.Status)
		}
		fmt.Fprint(w, `]}`)
	})
	var variant atomic.Value // the banner's design, as POST /evidence/banner set it
	variant.Store("a")
	mux.HandleFunc("POST /evidence/banner", func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query().Get("variant")
		if v != "a" && v != "b" {
			http.Error(w, "variant: want a or b", http.StatusBadRequest)
			return
		}
		variant.Store(v)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /evidence/banner", func(w http.ResponseWriter, r *http.Request) {
		color, text := "#0a5cad", "Spring sale: 20% off"
		v := r.URL.Query().Get("variant")
		if v == "" {
			v = variant.Load().(string)
		}
		if v == "b" {
			color, text = "#b3261e", "Summer sale: 30% off"
		}
		writeHTML(w, fmt.Sprintf(evidenceBannerPage, color, text, time.Now().Format("15:04:05.000")))
	})
	mux.HandleFunc("GET /evidence/a11y", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("fixed") {
			writeHTML(w, evidenceA11yFixed)
			return
		}
		writeHTML(w, evidenceA11yPage)
	})
	mux.HandleFunc("GET /evidence/speed", func(w http.ResponseWriter, r *http.Request) {
		delay, _ := strconv.Atoi(r.URL.Query().Get("delay"))
		writeHTML(w, fmt.Sprintf(evidenceSpeedPage, min(max(delay, 0), 5000)))
	})
	mux.HandleFunc("GET /evidence/hero.svg", func(w http.ResponseWriter, r *http.Request) {
		delay, _ := strconv.Atoi(r.URL.Query().Get("delay"))
		select {
		case <-time.After(time.Duration(min(max(delay, 0), 5000)) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprint(w, heroSVG)
	})
}

// heroSVG is the speed page's hero image: a mosaic of tiles under a title.
// A picture of one colour would not count as the largest contentful
// paint: Chromium leaves out images of low entropy (under 0.05 bits per
// pixel as sent).
var heroSVG = func() string {
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="600" height="300">`)
	for y := 0; y < 300; y += 20 {
		for x := 0; x < 600; x += 20 {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="20" height="20" fill="#%02x%02x%02x"/>`, x, y, 40+x/4, 120+y/3, 90+(x*y)%120)
		}
	}
	b.WriteString(`<text x="20" y="160" font-size="48" fill="#fff">Fresh arrivals</text></svg>`)
	return b.String()
}()

func writeHTML(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, body)
}

const evidenceOrdersPage = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Recent orders · Sample Shop</title>
<style>body{font-family:sans-serif;margin:16px} #load-error{color:#b3261e} li{padding:4px 0}</style></head><body>
<h1 id="orders-label">Recent orders</h1>
<p id="load-state">loading…</p><p id="load-error" hidden></p><ul id="order-list"></ul>
<script>
(async () => {
  const state = document.getElementById('load-state');
  try {
    const r = await fetch(%q);
    const body = await r.json();
    if (!r.ok) {
      console.error('loading orders failed: HTTP ' + r.status + ': ' + body.error.message);
      const e = document.getElementById('load-error');
      e.textContent = 'Could not load your orders (' + r.status + ').'; e.hidden = false;
      state.textContent = 'failed';
      return;
    }
    const ul = document.getElementById('order-list');
    for (const o of body.orders) { const li = document.createElement('li'); li.className = 'order'; li.textContent = o.id + ': ' + o.status; ul.appendChild(li); }
    state.textContent = 'loaded';
  } catch (err) { console.error(err); state.textContent = 'failed'; }
})();
</script></body></html>`

const evidenceBannerPage = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Offers · Sample Shop</title>
<style>
body{font-family:sans-serif;margin:0;background:#fff}
#banner{background:%s;color:#fff;padding:24px;font-size:28px;font-weight:bold}
#clock{font:16px monospace;padding:8px 24px;color:#333}
#spinner{display:inline-block;width:40px;height:40px;margin:12px 24px;background:#f5a623;animation:spin 0.6s linear infinite}
@keyframes spin{from{transform:rotate(0deg)}to{transform:rotate(360deg)}}
p{margin:12px 24px}
</style></head><body>
<div id="banner">%s</div>
<div id="clock">%s</div>
<div id="spinner" aria-hidden="true"></div>
<p>Offers change every season. Prices include VAT.</p>
<script>setInterval(() => { document.getElementById('clock').textContent = new Date().toISOString().slice(11, 23); }, 50);</script>
</body></html>`

const evidenceA11yPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Help · Sample Shop</title>
<style>#faint{color:#c8c8c8;background:#fff}</style></head><body><main>
<h1>Help</h1>
<img id="logo" src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7" width="40" height="40">
<button id="icon-button"><svg width="16" height="16" aria-hidden="true"><circle cx="8" cy="8" r="6"></circle></svg></button>
<p id="faint">Returns are free within 30 days.</p>
</main></body></html>`

const evidenceA11yFixed = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Help · Sample Shop</title>
<style>#faint{color:#333;background:#fff}</style></head><body><main>
<h1>Help</h1>
<img id="logo" alt="Sample Shop" src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7" width="40" height="40">
<button id="icon-button" aria-label="Search"><svg width="16" height="16" aria-hidden="true"><circle cx="8" cy="8" r="6"></circle></svg></button>
<p id="faint">Returns are free within 30 days.</p>
</main></body></html>`

const evidenceSpeedPage = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>New in · Sample Shop</title>
<style>body{font-family:sans-serif;margin:16px} #promo{height:120px;background:#fde293;padding:8px}</style></head><body>
<h1>New in</h1>
<p id="intro">This season's arrivals, picked for you. Free delivery over 50 EUR.</p>
<img id="hero" src="/evidence/hero.svg?delay=%d" width="600" height="300" alt="Fresh arrivals">
<script>
addEventListener('load', () => setTimeout(() => {
  const d = document.createElement('div'); d.id = 'promo'; d.textContent = 'Members save 10%% today';
  document.body.insertBefore(d, document.getElementById('intro'));
}, 50));
</script></body></html>`
