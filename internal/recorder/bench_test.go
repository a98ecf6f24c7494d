package recorder_test

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/browser"
	. "github.com/duet-test/duet/internal/recorder"
)

// latencyPage turns the whole page red on one click and green on the next.
const latencyPage = `<!doctype html><html><body style="margin:0">
<button id="b" style="width:100vw;height:100vh;border:0;background:rgb(0,200,0)">Toggle</button>
<script>let red = false; document.getElementById('b').addEventListener('click', (e) => {
  red = !red; e.target.style.background = red ? 'rgb(220,0,0)' : 'rgb(0,200,0)'; });</script></body></html>`

// BenchmarkLiveViewLatency measures the live view's latency: from a click
// sent to the recorder (as the console's input request hands it over) to
// the first screencast frame that shows its effect (the page's colour
// changed a quarter into the frame, decoded from the JPEG), over 50
// clicks per iteration, on the local Chromium; it reports the median and
// the 95th percentile. What it leaves out: the console's request and the
// frame's server-sent event (one loopback hop each way) and the browser's
// drawing of the image.
//
//	go test -run '^$' -bench BenchmarkLiveViewLatency -benchtime 1x ./internal/recorder/
func BenchmarkLiveViewLatency(b *testing.B) {
	if err := browser.NewPool(browser.Options{}).Available(); err != nil {
		b.Skip(err)
	}
	p := browser.NewPool(browser.Options{MaxBrowsers: 1})
	defer p.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, latencyPage)
	}))
	defer srv.Close()
	m := New(Options{Open: opener(p), FPS: 60})
	defer m.Close()
	l, err := m.Start(b.Context(), Start{Owner: "bench", BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	red := func(f *browser.LiveFrame) (bool, bool) {
		img, err := jpeg.Decode(bytes.NewReader(f.JPEG))
		if err != nil {
			return false, false
		}
		bd := img.Bounds()
		r, g, _, _ := img.At(bd.Dx()/4, bd.Dy()/4).RGBA()
		return r>>8 > 150 && g>>8 < 100, true
	}
	// awaitColour waits for a frame after since whose centre is (or is
	// not) red.
	awaitColour := func(wantRed bool, since time.Time) time.Time {
		deadline := time.After(30 * time.Second)
		for {
			ch, closed := l.Changed()
			if f := l.Frame(); f != nil && f.At.After(since) {
				if isRed, ok := red(f); ok && isRed == wantRed {
					return f.At
				}
			}
			if closed {
				b.Fatal("the session closed")
			}
			select {
			case <-ch:
			case <-deadline:
				f := l.Frame()
				img, _ := jpeg.Decode(bytes.NewReader(f.JPEG))
				bd := img.Bounds()
				b.Fatalf("no frame with red=%v: the last at %v is %v (%v) %+v", wantRed, f.At.Sub(since), img.At(bd.Dx()/4, bd.Dy()/4), bd, l.State())
			}
		}
	}
	awaitColour(false, time.Time{})
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		for i := range 50 {
			start := time.Now()
			for _, ev := range []browser.MouseInput{{Type: "pressed", X: 200, Y: 200, Button: "left", ClickCount: 1}, {Type: "released", X: 200, Y: 200, Button: "left", ClickCount: 1}} {
				if err := l.Mouse(b.Context(), ev); err != nil {
					b.Fatal(err)
				}
			}
			at := awaitColour(i%2 == 0, start)
			lat = append(lat, at.Sub(start))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}
