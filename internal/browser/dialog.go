package browser

import (
	"context"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// Dialog is a JavaScript dialog a page of the session opened, and how it
// was answered.
type Dialog struct {
	Type     string // alert, confirm, prompt or beforeunload
	Message  string
	Accepted bool
	At       time.Time
}

// dialogPolicy is how the session answers dialogs.
type dialogPolicy struct {
	dismiss    bool
	promptText *string // nil: the prompt's default
}

// maxDialogs bounds the dialogs a session remembers.
const maxDialogs = 50

// SetDialogs sets how the dialogs that open from now on are answered:
// accepted (the default: OK, and a prompt's default text or promptText
// when it is not nil) or dismissed (Cancel).
func (s *Session) SetDialogs(accept bool, promptText *string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dialogPolicy = dialogPolicy{dismiss: !accept, promptText: promptText}
}

// Dialogs returns the dialogs the session's pages opened, the oldest
// first (at most the last 50), and a channel closed when another opens.
func (s *Session) Dialogs() ([]Dialog, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Dialog(nil), s.dialogLog...), s.dialogSeen
}

// handleDialogs answers the JavaScript dialogs (alert, confirm, prompt,
// beforeunload) of the tab tctx, which would otherwise block the page, as
// the session's policy says, and records them.
func (s *Session) handleDialogs(tctx context.Context) {
	events := chromedp.Events(tctx, page.JavascriptDialogOpening)
	s.dialogs.Go(func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			s.mu.Lock()
			pol := s.dialogPolicy
			s.mu.Unlock()
			p := page.HandleJavaScriptDialogParams{Accept: !pol.dismiss, PromptText: ev.DefaultPrompt}
			if pol.promptText != nil {
				p.PromptText = *pol.promptText
			}
			if ev.Type == page.DialogTypeBeforeunload {
				p.Accept = true // a page that asks must not keep the case from going on
			}
			ctx, cancel := context.WithTimeout(tctx, 5*time.Second)
			_, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, p)
			cancel()
			if err != nil && tctx.Err() == nil {
				s.pool.log.Warn("browser: cannot answer a dialog", "type", ev.Type, "err", err)
			}
			s.mu.Lock()
			s.dialogLog = append(s.dialogLog, Dialog{Type: string(ev.Type), Message: ev.Message, Accepted: p.Accept, At: time.Now()})
			if len(s.dialogLog) > maxDialogs {
				s.dialogLog = s.dialogLog[len(s.dialogLog)-maxDialogs:]
			}
			close(s.dialogSeen)
			s.dialogSeen = make(chan struct{})
			s.mu.Unlock()
		}
	})
}

// closeTarget closes a page of a shared browser context that the session
// never attached to (a popup), from the browser's side.
func (s *Session) closeTarget(id target.ID) {
	if s.proc.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.proc.ctx, 5*time.Second)
	defer cancel()
	if _, err := chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: id}); err != nil {
		s.pool.log.Debug("browser: cannot close a popup", "err", duet.ErrorMessage(err))
	}
}
