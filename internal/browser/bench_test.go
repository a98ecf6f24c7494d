package browser

import (
	"context"
	"testing"
	"time"
)

// BenchmarkBrowserStart measures a cold start: a new pool starts a browser
// process, opens a session and loads a page; then everything is closed.
func BenchmarkBrowserStart(b *testing.B) {
	requireChromium(b)
	site := newSite(b)
	for b.Loop() {
		p := NewPool(Options{MaxBrowsers: 1})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := p.NewSession(ctx, Device{})
		if err == nil {
			err = s.Open(ctx, site.URL+"/page2?step=1")
			s.Close()
		}
		cancel()
		p.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSession measures one test execution on a warm pool: a new isolated
// browser context, a page load, a text read and the close.
func BenchmarkSession(b *testing.B) {
	requireChromium(b)
	site := newSite(b)
	p := NewPool(Options{MaxBrowsers: 1})
	defer p.Close()
	newSession(b, p, "desktop") // warm up: start the process
	ctx := b.Context()
	b.ResetTimer()
	for b.Loop() {
		s, err := p.NewSession(ctx, Device{})
		if err != nil {
			b.Fatal(err)
		}
		err = s.Open(ctx, site.URL+"/page2?step=1")
		if err == nil {
			var got string
			got, err = s.Text(ctx, "#step")
			if err == nil && got != "step 1" {
				b.Fatalf("got text %q, want %q", got, "step 1")
			}
		}
		s.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}
