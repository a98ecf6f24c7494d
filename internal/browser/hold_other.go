//go:build !unix

package browser

import "github.com/chromedp/chromedp"

// relay gives h no handle on this system: the browser holds no page, and a
// popup is guarded and routed from when its session attaches to it.
func (h *holder) relay() chromedp.ExecAllocatorOption {
	return func(*chromedp.ExecAllocator) {}
}
