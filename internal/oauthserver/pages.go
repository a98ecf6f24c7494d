package oauthserver

import (
	"net/http"
	"strings"
	"text/template"
)

var pages = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Duet</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34em;margin:4em auto;padding:0 1em;color:#222}
h1{font-size:1.4em}ul{padding-left:1.2em}.who{color:#555}button{font:inherit;padding:.5em 1.4em;margin-right:.6em;border-radius:6px;border:1px solid #888;background:#fff}
button[value=allow]{background:#1f6feb;color:#fff;border-color:#1f6feb}code{background:#f3f3f3;padding:0 .2em}</style></head><body>
<h1>{{.Title}}</h1>
{{if .Consent}}
<p><strong>{{.Client}}</strong> wants to use Duet as <strong>{{.User}}</strong>.</p>
<p class="who">It will return to <code>{{.Redirect}}</code>.</p>
<p>It will be able to:</p><ul>{{range .Grants}}<li>{{.}}</li>{{end}}</ul>
<form method="post" action="{{.Action}}"><input type="hidden" name="consent" value="{{.Consent}}">
<button name="action" value="allow" type="submit">Allow</button><button name="action" value="deny" type="submit">Deny</button></form>
<p class="who">You can revoke this later by signing out in the application.</p>
{{else}}<p>{{.Text}}</p>{{end}}
</body></html>`))

type pageData struct {
	Title, Text                             string
	Client, User, Redirect, Consent, Action string
	Grants                                  []string
}

func (s *Server) page(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	pages.Execute(w, pageData{Title: title, Text: text})
}

func (s *Server) consentPage(w http.ResponseWriter, req request, user, consent string) {
	name := req.DisplayName
	if name == "" {
		name = req.ClientID
	}
	var grants []string
	for _, sc := range strings.Fields(req.Scope) {
		switch sc {
		case s.o.Scopes.Read:
			grants = append(grants, "read the tasks, cases, runs and results you can see ("+sc+")")
		case s.o.Scopes.Run:
			grants = append(grants, "start and cancel test runs as you ("+sc+")")
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	// form-action is left open: the answer redirects to the client's address.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	pages.Execute(w, pageData{Title: "Allow access to Duet?", Client: name, User: user, Redirect: req.RedirectURI,
		Consent: consent, Action: s.o.Issuer + PathConsent, Grants: grants})
}
