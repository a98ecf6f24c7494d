package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/telemetry"
)

// NewTelemetry returns the metrics and tracing the configuration asks for
// (DUET_METRICS, OTEL_*): docs/operations.md.
func NewTelemetry(cfg *config.Config) (*telemetry.Telemetry, error) {
	o := telemetry.Options{Metrics: cfg.Metrics != "" && cfg.Metrics != "off", ServiceName: cfg.ServiceName, Version: Version}
	if cfg.OTLPEndpoint != "" {
		exp, err := telemetry.NewOTLPExporter(cfg.OTLPEndpoint, cfg.OTLPHeaders)
		if err != nil {
			return nil, &UsageError{err.Error()}
		}
		o.Exporter = exp
	}
	return telemetry.New(o), nil
}

// watch exports what is read at scrape time: the browser pool, the tool
// names that may be labels.
func (a *App) watch() {
	names := make([]string, 0, len(a.Catalog.Tools()))
	for _, t := range a.Catalog.Tools() {
		names = append(names, t.Name)
	}
	a.Telemetry.SetTools(names)
	a.Telemetry.WatchBrowsers(func() (int, int, int) {
		s := a.Browsers.Stats()
		return s.Sessions, s.Waiting, s.Browsers
	})
}

// metricsHandler serves the registry (nil when metrics are off).
func (a *App) metricsHandler() http.Handler {
	if !a.Telemetry.Metrics() {
		return nil
	}
	return promhttp.HandlerFor(a.Telemetry.Registry, promhttp.HandlerOpts{})
}

// metricsOnMainPort is /metrics on DUET_ADDR (DUET_METRICS=on).
func (a *App) metricsOnMainPort() http.Handler {
	if a.Config.Metrics != "on" {
		return nil
	}
	return a.metricsHandler()
}

// serveMetrics serves /metrics on a listener of its own when DUET_METRICS
// is a host:port, for duet serve and duet worker alike, with /healthz and
// /readyz beside it: a worker serves no other HTTP, and an orchestrator's
// probes of it need these. Like the listener's /metrics, they answer any
// Host (the listener is an operator's, not the clients').
func (a *App) serveMetrics(ctx context.Context, g *errgroup.Group) error {
	addr := a.Config.Metrics
	if addr == "" || addr == "off" || addr == "on" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &UsageError{"DUET_METRICS: cannot listen on " + addr + ": " + err.Error()}
	}
	a.Logger.Info("metrics listening", "addr", ln.Addr().String())
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metricsHandler())
	httpapi.Probes(mux, a.Store.Ping)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	return nil
}
