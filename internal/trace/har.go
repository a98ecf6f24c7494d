package trace

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"
)

// The HAR 1.2 format (http://www.softwareishard.com/blog/har-12-spec/):
// what Chrome DevTools, Firefox and Charles import.

type harFile struct {
	Log harLog `json:"log"`
}

type harLog struct {
	Version string     `json:"version"`
	Creator harCreator `json:"creator"`
	Pages   []harPage  `json:"pages"`
	Entries []harEntry `json:"entries"`
	Comment string     `json:"comment,omitempty"`
}

type harCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type harPage struct {
	StartedDateTime string         `json:"startedDateTime"`
	ID              string         `json:"id"`
	Title           string         `json:"title"`
	PageTimings     harPageTimings `json:"pageTimings"`
}

type harPageTimings struct {
	OnContentLoad float64 `json:"onContentLoad"`
	OnLoad        float64 `json:"onLoad"`
}

type harEntry struct {
	Pageref         string      `json:"pageref,omitempty"`
	StartedDateTime string      `json:"startedDateTime"`
	Time            float64     `json:"time"`
	Request         harRequest  `json:"request"`
	Response        harResponse `json:"response"`
	Cache           struct{}    `json:"cache"`
	Timings         harTimings  `json:"timings"`
	Comment         string      `json:"comment,omitempty"`
	ResourceType    string      `json:"_resourceType,omitempty"`
	Error           string      `json:"_error,omitempty"`
}

type harNV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// harMessage is what a HAR request and response both have, in the place
// both have it: the HTTP version, cookies and headers.
type harMessage struct {
	HTTPVersion string  `json:"httpVersion"`
	Cookies     []harNV `json:"cookies"`
	Headers     []harNV `json:"headers"`
}

// message is the harMessage of an HTTP/1.1 message with headers h (the
// cookies are not listed apart from the headers).
func message(h map[string]string) harMessage {
	return harMessage{HTTPVersion: "HTTP/1.1", Cookies: []harNV{}, Headers: nvs(h)}
}

type harRequest struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	harMessage
	QueryString []harNV      `json:"queryString"`
	PostData    *harPostData `json:"postData,omitempty"`
	HeadersSize int          `json:"headersSize"`
	BodySize    int          `json:"bodySize"`
}

type harPostData struct {
	MimeType string  `json:"mimeType"`
	Params   []harNV `json:"params"`
	Text     string  `json:"text"`
}

type harResponse struct {
	Status     int    `json:"status"`
	StatusText string `json:"statusText"`
	harMessage
	Content     harContent `json:"content"`
	RedirectURL string     `json:"redirectURL"`
	HeadersSize int        `json:"headersSize"`
	BodySize    int64      `json:"bodySize"`
}

type harContent struct {
	Size     int64  `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text,omitempty"`
	Encoding string `json:"encoding,omitempty"`
	Comment  string `json:"comment,omitempty"`
}

type harTimings struct {
	Blocked float64 `json:"blocked"`
	DNS     float64 `json:"dns"`
	Connect float64 `json:"connect"`
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
	SSL     float64 `json:"ssl"`
}

// HAR returns the network of t as a HAR 1.2 document: one page (the case)
// and an entry per request, with the bodies the trace kept.
func HAR(t *Trace) ([]byte, error) {
	start := t.StartedAt
	f := harFile{Log: harLog{
		Version: "1.2", Creator: harCreator{Name: "Duet", Version: fmt.Sprint(Version)},
		Pages: []harPage{{StartedDateTime: start.Format(time.RFC3339Nano), ID: "case", Title: t.CaseTitle,
			PageTimings: harPageTimings{OnContentLoad: -1, OnLoad: -1}}},
		Entries: []harEntry{},
	}}
	if t.Cut != nil && t.Cut.Bodies > 0 {
		f.Log.Comment = fmt.Sprintf("%d response bodies left out: %s", t.Cut.Bodies, t.Cut.Reason)
	}
	for _, r := range t.Network {
		e := harEntry{
			Pageref:         "case",
			StartedDateTime: start.Add(time.Duration(r.AtMs) * time.Millisecond).Format(time.RFC3339Nano),
			Time:            max(r.DurationMs, 0),
			Request: harRequest{Method: r.Method, URL: r.URL, harMessage: message(r.RequestHeaders),
				QueryString: query(r.URL), HeadersSize: -1, BodySize: -1},
			Response: harResponse{Status: r.Status, StatusText: r.StatusText, harMessage: message(r.ResponseHeaders),
				Content: harContent{Size: r.BodyBytes, MimeType: r.MIME, Text: r.Body, Comment: r.BodyNote}, HeadersSize: -1, BodySize: r.EncodedBytes},
			ResourceType: r.Type, Error: r.Failed,
		}
		if r.BodyBase64 {
			e.Response.Content.Encoding = "base64"
		}
		if e.Response.Content.MimeType == "" {
			e.Response.Content.MimeType = "x-unknown"
		}
		if r.PostData != "" {
			e.Request.PostData = &harPostData{MimeType: r.RequestHeaders["Content-Type"], Params: []harNV{}, Text: r.PostData}
			e.Request.BodySize = len(r.PostData)
		}
		if loc := r.ResponseHeaders["Location"]; loc != "" {
			e.Response.RedirectURL = loc
		}
		wait := max(r.WaitMs, 0)
		e.Timings = harTimings{Blocked: -1, DNS: -1, Connect: -1, SSL: -1, Send: 0, Wait: wait, Receive: max(e.Time-wait, 0)}
		f.Log.Entries = append(f.Log.Entries, e)
	}
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return nil, fmt.Errorf("trace: encoding the HAR: %w", err)
	}
	return b, nil
}

func nvs(h map[string]string) []harNV {
	out := []harNV{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		out = append(out, harNV{Name: k, Value: h[k]})
	}
	return out
}

func query(raw string) []harNV {
	out := []harNV{}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	q := u.Query()
	for _, k := range slices.Sorted(maps.Keys(q)) {
		for _, v := range q[k] {
			out = append(out, harNV{Name: k, Value: v})
		}
	}
	return out
}
