package sample

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// Cookies set by the shop's login form.
const (
	userCookie = "shop_user" // remembered username, set only with "remember me"
	langCookie = "shop_lang" // chosen language code
)

// language is one choice of the login form's language select.
type language struct {
	Code     string
	Name     string
	greeting string // welcome banner format; %s is the username
}

var languages = []language{
	{Code: "en", Name: "English", greeting: "Welcome, %s!"},
	{Code: "zh", Name: "中文", greeting: "欢迎，%s！"},
	{Code: "es", Name: "Español", greeting: "¡Bienvenido, %s!"},
}

// lookupLanguage returns the language with code, or English.
func lookupLanguage(code string) language {
	for _, l := range languages {
		if l.Code == code {
			return l
		}
	}
	return languages[0]
}

// page is the data of every shop page; each template reads the fields it
// needs.
type page struct {
	Title string // <title>, before " · Sample Shop"
	Lang  string // <html lang> and the selected language
	User  string // remembered username shown in the header, if any

	Welcome string  // index: welcome banner text
	Orders  []Order // index: the order list
	Order   *Order  // order: the order shown

	Heading string    // error: page heading
	Code    duet.Code // error: error code, as data-code of #error
	Message string    // error: message of #error

	Error     string     // login: validation error
	Username  string     // login: username to prefill
	Remember  bool       // login: remember-me state to keep
	Languages []language // login: language choices
}

// shop serves the sample H5 shop.
type shop struct {
	orders *Orders
	pages  map[string]*template.Template // by page name
}

// ShopHandler returns the sample H5 shop over orders: a small mobile-first
// web app with server-rendered HTML, inline CSS and a little inline JS.
//
// Pages:
//
//	GET  /                      order list (#orders, li.order[data-order-id]); ?welcome=NAME shows #welcome
//	GET  /order?orderId=A1001   order detail: #order-title, <span id="status" data-status="paid">paid</span>,
//	                            #customer, #updated-at, #items (tr.item), #total, #refresh, #cancel,
//	                            #cancel-confirm with #cancel-yes / #cancel-no, #message
//	GET  /login                 form #login-form: #username, #password, #language (en|zh|es), #remember, #login-submit
//	POST /login                 303 to /?welcome=NAME; 400 with #error when username or password is empty
//	unknown order or page       404 page with #error (400 when orderId is missing)
//
// JSON API (errors are {"error":{"code","message"}}):
//
//	GET  /api/orders?status=&limit=&cursor=   {"orders":[...],"nextCursor":"..."}
//	GET  /api/orders/{id}                     the order
//	POST /api/orders/{id}/cancel              the cancelled order; 409 CONFLICT once shipped
//	GET  /healthz                             "ok"
//	GET  /lab/...                             the lab's pages (lab.go)
//	GET  /flaky?key=K                         an element that fails the first time per key (flaky.go)
//
// Every response has Cache-Control: no-store, so a page always shows the
// current status.
func ShopHandler(orders *Orders) http.Handler {
	s := &shop{orders: orders, pages: make(map[string]*template.Template)}
	funcs := template.FuncMap{
		"money":   formatMoney,
		"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	}
	layout := template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.tmpl"))
	for _, name := range []string{"index", "order", "error", "login"} {
		t := template.Must(template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+name+".tmpl"))
		s.pages[name] = t
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /order", s.order)
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /api/orders", s.apiList)
	mux.HandleFunc("GET /api/orders/{id}", s.apiGet)
	mux.HandleFunc("POST /api/orders/{id}/cancel", s.apiCancel)
	registerEvidence(mux, orders) // evidence.go
	registerFlaky(mux)            // flaky.go
	mux.HandleFunc("GET /api/", s.apiNotFound)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	registerLab(mux)
	mux.HandleFunc("GET /", s.notFound)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
}

// StartShop serves [ShopHandler] over orders on addr (for example
// "127.0.0.1:0") and returns its base URL without a trailing slash, like
// "http://127.0.0.1:41235". The shop runs until ctx is done or stop is called;
// stop shuts it down gracefully, waits for it and may be called more than
// once.
// It returns INVALID_ARGUMENT when addr is not a loopback address and
// UNAVAILABLE when it cannot listen.
func StartShop(ctx context.Context, addr string, orders *Orders) (baseURL string, stop func(), err error) {
	rs, err := startServer(ctx, addr, ShopHandler(orders), nil)
	if err != nil {
		return "", nil, err
	}
	return rs.baseURL(), func() { _ = rs.stop() }, nil
}

// newPage returns the common page fields for r.
func (s *shop) newPage(r *http.Request, title string) page {
	p := page{Title: title, Lang: languages[0].Code}
	if c, err := r.Cookie(langCookie); err == nil {
		p.Lang = lookupLanguage(c.Value).Code
	}
	if c, err := r.Cookie(userCookie); err == nil {
		if u, err := url.QueryUnescape(c.Value); err == nil {
			p.User = u
		}
	}
	return p
}

// render executes the named page into a buffer, so a template error never
// leaves half a page, and writes it with status.
func (s *shop) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		slog.ErrorContext(r.Context(), "sample shop: rendering page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// renderError renders the error page for err: 404 for NOT_FOUND, 400 for
// INVALID_ARGUMENT and so on.
func (s *shop) renderError(w http.ResponseWriter, r *http.Request, err error) {
	code := duet.ErrorCode(err)
	status := httpStatus(code)
	p := s.newPage(r, http.StatusText(status))
	p.Heading, p.Code, p.Message = http.StatusText(status), code, duet.ErrorMessage(err)
	if code == duet.CodeNotFound {
		p.Title, p.Heading = "Not found", "Not found"
	}
	s.render(w, r, status, "error", p)
}

func (s *shop) index(w http.ResponseWriter, r *http.Request) {
	p := s.newPage(r, "Orders")
	if name := strings.TrimSpace(r.URL.Query().Get("welcome")); name != "" {
		p.Welcome = greet(lookupLanguage(p.Lang), name)
	}
	orders, _, err := s.orders.List(OrderFilter{Limit: MaxListLimit})
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	p.Orders = orders
	s.render(w, r, http.StatusOK, "index", p)
}

// greet formats the welcome banner; the template escapes it.
func greet(l language, name string) string {
	return strings.Replace(l.greeting, "%s", name, 1)
}

func (s *shop) order(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSpace(r.URL.Query().Get("orderId"))
	ord, err := s.orders.Get(id)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	p := s.newPage(r, "Order "+ord.ID)
	p.Order = &ord
	s.render(w, r, http.StatusOK, "order", p)
}

func (s *shop) loginForm(w http.ResponseWriter, r *http.Request) {
	p := s.newPage(r, "Sign in")
	p.Languages = languages
	p.Username = p.User
	s.render(w, r, http.StatusOK, "login", p)
}

// maxFormBytes bounds the login form body.
const maxFormBytes = 64 << 10

func (s *shop) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.renderError(w, r, duet.Errorf(duet.CodeInvalidArgument, "cannot read the form"))
		return
	}
	username := strings.TrimSpace(r.PostForm.Get("username"))
	password := r.PostForm.Get("password")
	lang := lookupLanguage(r.PostForm.Get("language"))
	remember := r.PostForm.Get("remember") != ""

	var problem string
	switch {
	case username == "":
		problem = "Enter your username."
	case len(username) > 64:
		problem = "Usernames are at most 64 characters."
	case password == "":
		problem = "Enter your password."
	}
	if problem != "" {
		p := s.newPage(r, "Sign in")
		p.Lang, p.Languages = lang.Code, languages
		p.Error, p.Username, p.Remember = problem, username, remember
		s.render(w, r, http.StatusBadRequest, "login", p)
		return
	}

	// Any non-empty password is accepted: the shop only exercises browser steps.
	http.SetCookie(w, &http.Cookie{Name: langCookie, Value: lang.Code, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteLaxMode})
	user := &http.Cookie{Name: userCookie, Value: url.QueryEscape(username), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: 30 * 24 * 3600}
	if !remember {
		user.Value, user.MaxAge = "", -1
	}
	http.SetCookie(w, user)
	http.Redirect(w, r, "/?welcome="+url.QueryEscape(username), http.StatusSeeOther)
}

func (s *shop) notFound(w http.ResponseWriter, r *http.Request) {
	s.renderError(w, r, duet.Errorf(duet.CodeNotFound, "page %q not found", r.URL.Path))
}

// ordersPage is the JSON body of GET /api/orders.
type ordersPage struct {
	Orders     []Order `json:"orders"`
	NextCursor string  `json:"nextCursor,omitempty"`
}

func (s *shop) apiList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := OrderFilter{Status: Status(q.Get("status")), Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeJSONError(w, r, duet.Errorf(duet.CodeInvalidArgument, "invalid limit %q: want a number", v))
			return
		}
		f.Limit = n
	}
	orders, next, err := s.orders.List(f)
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ordersPage{Orders: orders, NextCursor: next})
}

func (s *shop) apiGet(w http.ResponseWriter, r *http.Request) {
	ord, err := s.orders.Get(r.PathValue("id"))
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ord)
}

func (s *shop) apiCancel(w http.ResponseWriter, r *http.Request) {
	ord, err := s.orders.Cancel(r.PathValue("id"))
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ord)
}

func (s *shop) apiNotFound(w http.ResponseWriter, r *http.Request) {
	writeJSONError(w, r, duet.Errorf(duet.CodeNotFound, "no API route %s %s", r.Method, r.URL.Path))
}

// httpStatus maps an error code to the shop's HTTP status.
func httpStatus(code duet.Code) int {
	switch code {
	case duet.CodeInvalidArgument:
		return http.StatusBadRequest
	case duet.CodeNotFound:
		return http.StatusNotFound
	case duet.CodeConflict:
		return http.StatusConflict
	default:
		return http.StatusInternalServerError
	}
}

// apiError is the JSON error body {"error":{"code","message"}}.
type apiError struct {
	Error ToolError `json:"error"`
}

func writeJSONError(w http.ResponseWriter, r *http.Request, err error) {
	code := duet.ErrorCode(err)
	var de *duet.Error
	if !errors.As(err, &de) {
		slog.ErrorContext(r.Context(), "sample shop: request failed", "path", r.URL.Path, "err", err)
	}
	writeJSON(w, httpStatus(code), apiError{Error: ToolError{Code: code, Message: duet.ErrorMessage(err)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":{"code":"INTERNAL","message":"internal error"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
