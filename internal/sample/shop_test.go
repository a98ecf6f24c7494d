package sample

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

// noRedirect is a client that returns redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// fetch performs a request and returns the response with its body read.
func fetch(t *testing.T, c *http.Client, method, url string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: got error %v, want a response", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return resp, string(b)
}

var statusSpan = regexp.MustCompile(`<span id="status" data-status="([a-z]+)">([a-z]+)</span>`)

// pageStatus returns the order status the order page shows in #status.
func pageStatus(t *testing.T, html string) Status {
	t.Helper()
	m := statusSpan.FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("order page: got no #status span, want one in:\n%s", html)
	}
	if m[1] != m[2] {
		t.Fatalf("#status: got data-status %q and text %q, want them equal", m[1], m[2])
	}
	return Status(m[1])
}

func TestShopPages(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(ShopHandler(NewOrders()))
	t.Cleanup(ts.Close)

	tests := []struct {
		name        string
		method      string
		path        string
		wantStatus  int
		wantType    string
		wantContain []string
		wantAbsent  []string
	}{
		{name: "order list", method: "GET", path: "/", wantStatus: 200, wantType: "text/html; charset=utf-8",
			wantContain: []string{`<meta name="viewport"`, `id="orders"`, `data-order-id="A1001"`,
				`href="/order?orderId=A1005"`, `data-status="shipped"`, `id="login-link"`},
			wantAbsent: []string{`id="welcome"`, `<link`, `src="http`}},
		{name: "welcome banner", method: "GET", path: "/?welcome=alice", wantStatus: 200,
			wantContain: []string{`<div id="welcome" class="banner" role="status">Welcome, alice!</div>`}},
		{name: "welcome is escaped", method: "GET", path: "/?welcome=" + url.QueryEscape("<script>x()</script>"), wantStatus: 200,
			wantContain: []string{"Welcome, &lt;script&gt;x()&lt;/script&gt;!"}, wantAbsent: []string{"<script>x()"}},
		{name: "order detail", method: "GET", path: "/order?orderId=A1001", wantStatus: 200, wantType: "text/html; charset=utf-8",
			wantContain: []string{`<title>Order A1001 · Sample Shop</title>`, `<h1 id="order-title">Order A1001</h1>`,
				`<span id="status" data-status="paid">paid</span>`, `<span id="customer">Alice Chen</span>`,
				`<tr class="item" data-name="Wireless earbuds">`, `<td class="item-qty num">2</td>`,
				`<strong id="total" data-cents="6797" data-currency="USD">$67.97</strong>`,
				`<time id="updated-at" datetime="2026-03-02T09:15:00Z">`,
				`<button id="refresh" type="button" class="primary">Refresh</button>`,
				`<button id="cancel" type="button" class="danger">Cancel order</button>`,
				`id="cancel-confirm"`, `id="cancel-yes"`, `id="cancel-no"`, `id="message"`, `'/api/orders/'`}},
		{name: "shipped order cannot be cancelled", method: "GET", path: "/order?orderId=A1003", wantStatus: 200,
			wantContain: []string{`<span id="status" data-status="shipped">shipped</span>`, `class="danger" disabled>Cancel order`, "€88.90", "Chloé Dubois"}},
		{name: "unknown order", method: "GET", path: "/order?orderId=A9999", wantStatus: 404, wantType: "text/html; charset=utf-8",
			wantContain: []string{`<div id="error" class="error" role="alert" data-code="NOT_FOUND">order &#34;A9999&#34; not found</div>`},
			wantAbsent:  []string{`id="status"`}},
		{name: "missing orderId", method: "GET", path: "/order", wantStatus: 400,
			wantContain: []string{`id="error"`, "orderId is required"}},
		{name: "unknown page", method: "GET", path: "/nope", wantStatus: 404, wantContain: []string{`id="error"`}},
		{name: "login form", method: "GET", path: "/login", wantStatus: 200,
			wantContain: []string{`<form id="login-form" class="card" method="post" action="/login">`,
				`id="username" name="username" type="text"`, `id="password" name="password" type="password"`,
				`<select id="language" name="language">`, `<option value="zh">中文</option>`,
				`id="remember" name="remember" type="checkbox"`, `id="login-submit" type="submit"`}},
		{name: "health", method: "GET", path: "/healthz", wantStatus: 200, wantContain: []string{"ok"}},
		{name: "wrong method", method: "POST", path: "/order", wantStatus: 405},
		{name: "unknown API route", method: "GET", path: "/api/nope", wantStatus: 404, wantType: "application/json",
			wantContain: []string{`"code":"NOT_FOUND"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := fetch(t, noRedirect, tt.method, ts.URL+tt.path, nil)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("%s %s status: got %d, want %d", tt.method, tt.path, resp.StatusCode, tt.wantStatus)
			}
			if got := resp.Header.Get("Content-Type"); tt.wantType != "" && got != tt.wantType {
				t.Errorf("Content-Type: got %q, want %q", got, tt.wantType)
			}
			if got := resp.Header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
			for _, s := range tt.wantContain {
				if !strings.Contains(body, s) {
					t.Errorf("body: got no %q, want it in:\n%s", s, body)
				}
			}
			for _, s := range tt.wantAbsent {
				if strings.Contains(body, s) {
					t.Errorf("body: got %q, want it absent", s)
				}
			}
		})
	}
}

func TestShopOrderPageShowsEveryStatus(t *testing.T) {
	t.Parallel()
	orders := NewOrders()
	ts := httptest.NewServer(ShopHandler(orders))
	t.Cleanup(ts.Close)
	list, _, _ := orders.List(OrderFilter{})
	for _, ord := range list {
		t.Run(ord.ID, func(t *testing.T) {
			t.Parallel()
			_, body := fetch(t, http.DefaultClient, "GET", ts.URL+"/order?orderId="+ord.ID, nil)
			if got := pageStatus(t, body); got != ord.Status {
				t.Errorf("#status of %s: got %q, want %q", ord.ID, got, ord.Status)
			}
		})
	}
}

func TestShopAPI(t *testing.T) {
	t.Parallel()
	orders := NewOrders()
	ts := httptest.NewServer(ShopHandler(orders))
	t.Cleanup(ts.Close)

	t.Run("get order", func(t *testing.T) {
		t.Parallel()
		resp, body := fetch(t, http.DefaultClient, "GET", ts.URL+"/api/orders/A1004", nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("got %d %q, want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var got Order
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		if diff := cmp.Diff(*mustGet(t, orders, "A1004"), got); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
	})

	listTests := []struct {
		query      string
		wantStatus int
		wantIDs    []string
		wantNext   bool
		wantCode   duet.Code
	}{
		{query: "", wantStatus: 200, wantIDs: []string{"A1001", "A1002", "A1003", "A1004", "A1005"}},
		{query: "?status=pending", wantStatus: 200, wantIDs: []string{"A1002"}},
		{query: "?limit=3", wantStatus: 200, wantIDs: []string{"A1001", "A1002", "A1003"}, wantNext: true},
		{query: "?limit=3&cursor=" + encodeCursor("A1003"), wantStatus: 200, wantIDs: []string{"A1004", "A1005"}},
		{query: "?status=lost", wantStatus: 400, wantCode: duet.CodeInvalidArgument},
		{query: "?limit=many", wantStatus: 400, wantCode: duet.CodeInvalidArgument},
		{query: "?cursor=zzz", wantStatus: 400, wantCode: duet.CodeInvalidArgument},
	}
	for _, tt := range listTests {
		t.Run("list"+tt.query, func(t *testing.T) {
			t.Parallel()
			resp, body := fetch(t, http.DefaultClient, "GET", ts.URL+"/api/orders"+tt.query, nil)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status: got %d (%s), want %d", resp.StatusCode, body, tt.wantStatus)
			}
			var got struct {
				ordersPage
				apiError
			}
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("decode %s: %v", body, err)
			}
			if tt.wantCode != "" {
				if got.Error.Code != tt.wantCode || got.Error.Message == "" {
					t.Errorf("error: got %+v, want code %s and a message", got.Error, tt.wantCode)
				}
				return
			}
			if diff := cmp.Diff(tt.wantIDs, ids(got.Orders)); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			if (got.NextCursor != "") != tt.wantNext {
				t.Errorf("nextCursor: got %q, want one: %v", got.NextCursor, tt.wantNext)
			}
		})
	}

	t.Run("unknown order", func(t *testing.T) {
		t.Parallel()
		resp, body := fetch(t, http.DefaultClient, "GET", ts.URL+"/api/orders/A9999", nil)
		want := `{"error":{"code":"NOT_FOUND","message":"order \"A9999\" not found"}}` + "\n"
		if resp.StatusCode != 404 || body != want {
			t.Errorf("got %d %s, want 404 %s", resp.StatusCode, body, want)
		}
	})
}

func TestShopCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id         string
		wantStatus int
		wantCode   duet.Code
		wantAfter  Status // shown on the order page afterwards
	}{
		{id: "A1001", wantStatus: 200, wantAfter: StatusCancelled},
		{id: "A1002", wantStatus: 200, wantAfter: StatusCancelled},
		{id: "A1003", wantStatus: 409, wantCode: duet.CodeConflict, wantAfter: StatusShipped},
		{id: "A1005", wantStatus: 200, wantAfter: StatusCancelled},
		{id: "A9999", wantStatus: 404, wantCode: duet.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(ShopHandler(NewOrders()))
			t.Cleanup(ts.Close)
			resp, body := fetch(t, http.DefaultClient, "POST", ts.URL+"/api/orders/"+tt.id+"/cancel", nil)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("POST cancel %s: got %d (%s), want %d", tt.id, resp.StatusCode, body, tt.wantStatus)
			}
			if tt.wantCode != "" {
				var e apiError
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != tt.wantCode {
					t.Errorf("error body: got %s, want code %s", body, tt.wantCode)
				}
			} else {
				var ord Order
				if err := json.Unmarshal([]byte(body), &ord); err != nil || ord.Status != StatusCancelled {
					t.Errorf("body: got %s, want the cancelled order", body)
				}
			}
			if tt.wantAfter == "" {
				return
			}
			_, page := fetch(t, http.DefaultClient, "GET", ts.URL+"/order?orderId="+tt.id, nil)
			if got := pageStatus(t, page); got != tt.wantAfter {
				t.Errorf("page #status after cancel: got %q, want %q", got, tt.wantAfter)
			}
		})
	}
}

func TestShopLogin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		form         url.Values
		wantStatus   int
		wantLocation string
		wantPage     []string // in the page after following the redirect, or the form page on error
	}{
		{name: "english", form: url.Values{"username": {"alice"}, "password": {"pw"}, "language": {"en"}},
			wantStatus: 303, wantLocation: "/?welcome=alice",
			wantPage: []string{`<html lang="en">`, "Welcome, alice!", `id="login-link"`}},
		{name: "chinese and remember me", form: url.Values{"username": {"bob"}, "password": {"pw"}, "language": {"zh"}, "remember": {"on"}},
			wantStatus: 303, wantLocation: "/?welcome=bob",
			wantPage: []string{`<html lang="zh">`, "欢迎，bob！", `<span id="user">Signed in as bob</span>`}},
		{name: "name with space", form: url.Values{"username": {" Ana María "}, "password": {"pw"}, "language": {"es"}, "remember": {"on"}},
			wantStatus: 303, wantLocation: "/?welcome=Ana+Mar%C3%ADa",
			wantPage: []string{"¡Bienvenido, Ana María!", "Signed in as Ana María"}},
		{name: "unknown language falls back to English", form: url.Values{"username": {"carol"}, "password": {"pw"}, "language": {"xx"}},
			wantStatus: 303, wantLocation: "/?welcome=carol", wantPage: []string{"Welcome, carol!"}},
		{name: "empty username", form: url.Values{"username": {"  "}, "password": {"pw"}},
			wantStatus: 400, wantPage: []string{`<div id="error" class="error" role="alert">Enter your username.</div>`}},
		{name: "empty password keeps input", form: url.Values{"username": {"dave"}, "language": {"zh"}, "remember": {"on"}},
			wantStatus: 400, wantPage: []string{"Enter your password.", `value="dave"`, `<option value="zh" selected>`, `value="on" checked>`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(ShopHandler(NewOrders()))
			t.Cleanup(ts.Close)
			jar, err := cookiejar.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			c := &http.Client{Jar: jar, CheckRedirect: noRedirect.CheckRedirect}
			resp, body := fetch(t, c, "POST", ts.URL+"/login", tt.form)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("POST /login: got %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if got := resp.Header.Get("Location"); got != tt.wantLocation {
				t.Errorf("Location: got %q, want %q", got, tt.wantLocation)
			}
			if tt.wantLocation != "" {
				_, body = fetch(t, c, "GET", ts.URL+tt.wantLocation, nil)
			}
			for _, s := range tt.wantPage {
				if !strings.Contains(body, s) {
					t.Errorf("page: got no %q, want it in:\n%s", s, body)
				}
			}
		})
	}
}

func TestStartShop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	base, stop, err := StartShop(ctx, "127.0.0.1:0", NewOrders())
	if err != nil {
		t.Fatalf("StartShop: got error %v, want nil", err)
	}
	defer stop()
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(base) {
		t.Errorf("base URL: got %q, want http://127.0.0.1:PORT", base)
	}
	resp, body := fetch(t, http.DefaultClient, "GET", base+"/order?orderId=A1002", nil)
	if resp.StatusCode != 200 || pageStatus(t, body) != StatusPending {
		t.Errorf("GET /order?orderId=A1002: got %d, want 200 with #status pending", resp.StatusCode)
	}

	cancel() // the shop stops with its context
	stop()   // and stop after that is a no-op
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Errorf("GET after shutdown: got a response, want a connection error")
	}

	if _, _, err := StartShop(context.Background(), "0.0.0.0:0", NewOrders()); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("StartShop on 0.0.0.0: got %v, want INVALID_ARGUMENT", err)
	}
}
