package trace

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"sync"

	"github.com/duet-test/duet"
)

// The viewer: one page generated from the Trace (everything in it escaped
// by html/template), a script that only selects, filters and plays what
// the page already shows, and a stylesheet. It sits in the zip beside the
// files it shows and works from an unzipped folder or as the console
// serves it (the script and styles are files, never inline, so the
// console's Content-Security-Policy holds).

//go:embed viewer/index.html
var viewerHTML string

//go:embed viewer/viewer.js
var viewerJS []byte

//go:embed viewer/viewer.css
var viewerCSS []byte

var viewerTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("index.html").Funcs(template.FuncMap{
		"inc": func(i int) int { return i + 1 },
		"dec": func(i int) int { return i - 1 },
		"sub": func(a, b int64) int64 { return a - b },
		"ms":  formatMs,
		"msf": func(f float64) string { return formatMs(int64(f + 0.5)) },
		"bytes": func(n int64) string {
			switch {
			case n < 0:
				return "—"
			case n < 1024:
				return fmt.Sprintf("%d B", n)
			case n < 1<<20:
				return fmt.Sprintf("%.1f KiB", float64(n)/1024)
			}
			return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		},
	}).Parse(viewerHTML))
})

func formatMs(ms int64) string { return duet.FormatMs(ms, 2) }

func viewerPage(t *Trace) ([]byte, error) {
	var b bytes.Buffer
	if err := viewerTmpl().Execute(&b, struct{ T *Trace }{t}); err != nil {
		return nil, fmt.Errorf("trace: rendering the viewer: %w", err)
	}
	return b.Bytes(), nil
}
