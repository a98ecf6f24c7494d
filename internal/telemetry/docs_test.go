package telemetry

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDocsNameRealMetrics: every duet_* metric the Grafana dashboard, the
// example alerts and docs/operations.md name is one Duet exports (a
// renamed metric would leave them silently empty).
func TestDocsNameRealMetrics(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry())
	known := map[string]bool{"duet_browser_sessions_in_use": true, "duet_browser_waiting": true, "duet_browser_processes": true}
	ch := make(chan *prometheus.Desc, 100)
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
	close(ch)
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		known[name.FindStringSubmatch(d.String())[1]] = true
	}
	used := regexp.MustCompile(`duet_[a-z_]+`)
	for _, f := range []string{"../../docs/grafana-dashboard.json", "../../docs/alerts.yml", "../../docs/operations.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range used.FindAllString(string(b), -1) {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if strings.HasSuffix(n, suffix) && known[strings.TrimSuffix(n, suffix)] {
					n = strings.TrimSuffix(n, suffix)
				}
			}
			if !known[n] && n != "duet_" {
				t.Errorf("%s names %s, which Duet does not export", f, n)
			}
		}
	}
}
