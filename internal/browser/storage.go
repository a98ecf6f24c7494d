package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// StorageState is what a signed-in page keeps of a person: the cookies of
// the session's browser context and the localStorage of the page's origin.
// It is as secret as a password (saveSession, session steps).
type StorageState struct {
	Cookies []Cookie        `json:"cookies"`
	Origins []OriginStorage `json:"origins,omitempty"`
}

// Cookie is one cookie of a StorageState.
type Cookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain"`
	Path     string  `json:"path"`
	Expires  float64 `json:"expires,omitempty"` // seconds since the epoch; 0 a session cookie
	HTTPOnly bool    `json:"httpOnly,omitempty"`
	Secure   bool    `json:"secure,omitempty"`
	SameSite string  `json:"sameSite,omitempty"`
}

// OriginStorage is the localStorage of one origin.
type OriginStorage struct {
	Origin       string            `json:"origin"`
	LocalStorage map[string]string `json:"localStorage"`
}

// MaxStorageState bounds a StorageState, as JSON.
const MaxStorageState = 1 << 20

// StorageState returns the cookies of the session's browser context and
// the localStorage of the current page's origin. A shared session (a phone's
// default context) returns the cookies of the origins it visited only.
// Errors: CodeTooLarge past MaxStorageState, CodeCancelled,
// CodeStepTimeout, CodeBrowserError.
func (s *Session) StorageState(ctx context.Context) (StorageState, error) {
	const op = "saveSession"
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return StorageState{}, err
	}
	defer s.end(c)
	var cookies []*network.Cookie
	if s.shared {
		s.mu.Lock()
		var urls []string
		for o := range s.origins {
			urls = append(urls, o)
		}
		s.mu.Unlock()
		res, err := chromedp.Call(c.c, network.GetCookies, network.GetCookiesParams{URLs: urls})
		if err != nil {
			return StorageState{}, s.fail(c, err, nil)
		}
		cookies = res.Cookies
	} else {
		res, err := chromedp.CallBrowser(c.c, storage.GetCookies, storage.GetCookiesParams{BrowserContextID: s.contextID})
		if err != nil {
			return StorageState{}, s.fail(c, err, nil)
		}
		cookies = res.Cookies
	}
	st := StorageState{Cookies: []Cookie{}}
	for _, ck := range cookies {
		x := Cookie{Name: ck.Name, Value: ck.Value, Domain: ck.Domain, Path: ck.Path, HTTPOnly: ck.HTTPOnly, Secure: ck.Secure, SameSite: string(ck.SameSite)}
		if !ck.Session && ck.Expires > 0 {
			x.Expires = ck.Expires
		}
		st.Cookies = append(st.Cookies, x)
	}
	o, err := chromedp.Run(c.c, chromedp.Evaluate[OriginStorage](`(() => {
	const out = {origin: location.origin, localStorage: {}};
	try { for (let i = 0; i < localStorage.length; i++) { const k = localStorage.key(i); out.localStorage[k] = localStorage.getItem(k); } } catch (e) {}
	return out;
})()`))
	if err != nil {
		return StorageState{}, s.fail(c, err, nil)
	}
	if u, err := url.Parse(o.Origin); err == nil && (u.Scheme == "http" || u.Scheme == "https") && len(o.LocalStorage) > 0 {
		st.Origins = append(st.Origins, o)
	}
	if b, _ := json.Marshal(st); len(b) > MaxStorageState {
		return StorageState{}, opError(duet.CodeTooLarge, op, nil, "saveSession: the page's cookies and localStorage are %d bytes, more than the %d a session keeps", len(b), MaxStorageState)
	}
	return st, nil
}

// SetStorageState gives the session the cookies of st, and the
// localStorage of its origins to each page of those origins that the
// session's tabs load from now on (once per tab and origin, before the
// page's scripts run; what the page changes later stays). Call it before
// the first navigation. Errors: CodeCancelled, CodeStepTimeout,
// CodeBrowserError.
func (s *Session) SetStorageState(ctx context.Context, st StorageState) error {
	const op = "session"
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	var params []*network.CookieParam
	for _, ck := range st.Cookies {
		p := &network.CookieParam{Name: ck.Name, Value: ck.Value, Domain: ck.Domain, Path: ck.Path, Secure: ck.Secure, HTTPOnly: ck.HTTPOnly, SameSite: network.CookieSameSite(ck.SameSite)}
		if ck.Expires > 0 {
			p.Expires = cdp.TimeSinceEpoch(ck.Expires)
		}
		params = append(params, p)
	}
	if len(params) > 0 {
		if s.shared {
			_, err = chromedp.Call(c.c, network.SetCookies, network.SetCookiesParams{Cookies: params})
		} else {
			_, err = chromedp.CallBrowser(c.c, storage.SetCookies, storage.SetCookiesParams{Cookies: params, BrowserContextID: s.contextID})
		}
		if err != nil {
			return s.fail(c, err, nil)
		}
	}
	if len(st.Origins) == 0 {
		return nil
	}
	data, err := json.Marshal(st.Origins)
	if err != nil {
		return opError(duet.CodeInternal, op, err, "session: %v", err)
	}
	script := fmt.Sprintf(`(() => {
	const origins = %s;
	for (const o of origins) {
		if (o.origin !== location.origin) continue;
		try {
			if (sessionStorage.getItem('__duetSession')) return;
			sessionStorage.setItem('__duetSession', '1');
			for (const [k, v] of Object.entries(o.localStorage)) localStorage.setItem(k, v);
		} catch (e) {}
	}
})()`, data)
	for _, tctx := range s.tabContexts() {
		bctx, cancel := bind(tctx, c.c)
		_, err := chromedp.Call(bctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: script})
		cancel()
		if err != nil {
			return s.fail(c, err, nil)
		}
	}
	return nil
}
