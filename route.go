package duet

// Route is what a route step does to the requests of the case's page that
// match it (network mocking, through the browser's own protocol). The
// route holds for the rest of the case, in every tab of the case's page;
// a later route that matches the same request wins over an earlier one.
//
// It fulfils the request (Status, Headers, Body: no request leaves the
// browser), aborts it (Abort), or lets it go on, with the request headers
// of SetHeaders added or replaced; DelayMs holds it first. A route never
// changes where a request goes: the network guard judges the page's
// navigations before any route, so a refused destination stays refused
// whatever a route says.
type Route struct {
	// URL is a glob the whole URL must match: ** any characters, * any
	// but /, {a,b} either; a glob that starts with / matches that path on
	// any origin. A template. Exactly one of URL and URLMatches is set.
	URL string `json:"url,omitempty"`
	// URLMatches is a regular expression (RE2) the URL matches. A template.
	URLMatches string `json:"urlMatches,omitempty"`
	// Method limits the route to one HTTP method ("" any).
	Method string `json:"method,omitempty"`
	// Times is how many requests the route handles before it stops
	// matching; 0 means no end.
	Times int `json:"times,omitempty"`

	// Fulfil: the status (200 when a body is given without one), the
	// response headers (values are templates) and the body: Body (a
	// template), JSON (string leaves are templates) or the bytes of a file
	// of the suite's folder, read when the suite compiled (File, FileData).
	Status      int               `json:"status,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        string            `json:"body,omitempty"`
	JSON        any               `json:"json,omitempty"`
	File        string            `json:"file,omitempty"` // the file's path in the suite's folder
	FileData    []byte            `json:"fileData,omitempty"`
	ContentType string            `json:"contentType,omitempty"` // the body's type, when no header names one

	// Abort fails the request with a network error: failed, aborted,
	// timedout, accessdenied, connectionclosed, connectionreset,
	// connectionrefused, connectionaborted, connectionfailed,
	// namenotresolved, internetdisconnected, addressunreachable,
	// blockedbyclient, blockedbyresponse.
	Abort string `json:"abort,omitempty"`

	// SetHeaders adds or replaces headers of a request that goes on to the
	// network (values are templates).
	SetHeaders map[string]string `json:"setHeaders,omitempty"`

	// DelayMs holds the request this long before it is fulfilled,
	// aborted or let go.
	DelayMs int64 `json:"delayMs,omitempty"`
}

// Fulfils reports whether the route answers requests itself.
func (r *Route) Fulfils() bool {
	return r.Status != 0 || r.Body != "" || r.JSON != nil || r.File != ""
}

// RequestMatch picks the requests of the case's page a waitForResponse or
// an expectRequest step is about.
type RequestMatch struct {
	URL        string `json:"url,omitempty"`        // a glob, as in Route.URL (template)
	URLMatches string `json:"urlMatches,omitempty"` // a regular expression (template)
	Method     string `json:"method,omitempty"`     // "" any
	Status     int    `json:"status,omitempty"`     // waitForResponse: the status the response must have (0 any)
	Count      *int   `json:"count,omitempty"`      // expectRequest: how many requests (nil: at least one)
}
