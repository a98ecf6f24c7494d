package browser

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// capture runs Page.captureScreenshot with params on the call's tab and
// returns the image. A capture asked while the main frame commits a new
// document is of a document that is going away: Chromium answers "Not
// attached to an active page" at once, and its headless shell never
// answers at all — the step after a click that navigates waited for its
// deadline. So capture watches for that commit (Page.frameNavigated of the
// main frame) and asks again of the new document; "Not attached" is asked
// again after a pause that grows from 10 to 100 ms, as the page's other
// waits do while it navigates. Every other answer, and the call's deadline,
// end it.
func (s *Session) capture(c *call, params page.CaptureScreenshotParams) ([]byte, error) {
	var last error
	delay := 10 * time.Millisecond
	for {
		data, committed, err := captureOnce(c.c, params)
		switch {
		case committed:
			s.captureRetries.Add(1)
			continue
		case notAttached(err):
			s.captureRetries.Add(1)
			last = err
			if err := sleep(c.c, delay); err != nil {
				return nil, joinErr(err, last)
			}
			delay = min(2*delay, 100*time.Millisecond)
			continue
		}
		return data, err
	}
}

// captureOnce asks for one capture. committed reports that the main frame
// committed a new document before the answer came: the capture is then
// abandoned.
func captureOnce(ctx context.Context, params page.CaptureScreenshotParams) (data []byte, committed bool, err error) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	navigated := make(chan struct{})
	var once sync.Once
	if err := chromedp.Listen(lctx, func(ev any) {
		if e, ok := ev.(*page.EventFrameNavigated); ok && e.Frame != nil && e.Frame.ParentID == "" {
			once.Do(func() { close(navigated) })
		}
	}); err != nil {
		return nil, false, err
	}
	type answer struct {
		data []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := chromedp.Call(lctx, page.CaptureScreenshot, params)
		if err != nil {
			done <- answer{err: err}
			return
		}
		done <- answer{data: res.Data}
	}()
	select {
	case a := <-done:
		return a.data, false, a.err
	case <-navigated:
		cancel()
		<-done
		return nil, true, nil
	}
}

// notAttached reports whether err is Chromium's answer to a call on a
// document that a navigation is replacing.
func notAttached(err error) bool {
	var pe *cdproto.Error
	return errors.As(err, &pe) && strings.Contains(pe.Message, "Not attached to an active page")
}
