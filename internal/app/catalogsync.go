package app

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

// SourceCatalogSync is the call source of the automatic catalog syncs.
const SourceCatalogSync duet.CallSource = "catalog-sync"

// CatalogSyncer syncs every registered MCP server's catalog again when it
// was not synced for an interval (DUET_MCP_SYNC_INTERVAL), as the
// registration's owner, with the owner's credentials: a changed catalog
// checks the cases calling its tools (contract alerts) without anyone
// pressing sync. Each due registration is claimed in the database, so of
// several instances one syncs it.
type CatalogSyncer struct {
	a     *App
	every time.Duration
	// Now is the clock (tests move it); Poll how often the store is
	// looked at (default: a tenth of the interval, at least 1s, at most 1m).
	Now  func() time.Time
	Poll time.Duration
	// Synced, if set, hears of each automatic sync (tests wait on it).
	Synced func(reg *duet.MCPServer, err error)
}

func newCatalogSyncer(a *App, every time.Duration) *CatalogSyncer {
	return &CatalogSyncer{a: a, every: every, Now: time.Now, Poll: min(max(every/10, time.Second), time.Minute)}
}

// Run syncs the due catalogs until ctx ends (nothing with an interval of 0).
func (s *CatalogSyncer) Run(ctx context.Context) {
	if s.every <= 0 {
		return
	}
	for {
		s.SyncDue(ctx)
		t := time.NewTimer(s.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// SyncDue syncs every registration due now and returns how many it synced
// (failures included: a server that is down is tried again an interval
// later).
func (s *CatalogSyncer) SyncDue(ctx context.Context) int {
	n := 0
	for ctx.Err() == nil {
		reg, err := s.a.Store.ClaimCatalogSync(ctx, s.Now(), s.every)
		if err != nil {
			if ctx.Err() == nil {
				s.a.Logger.WarnContext(ctx, "catalog sync: claiming a registration", "err", err)
			}
			return n
		}
		if reg == nil {
			return n
		}
		n++
		sctx := duet.NewContextWithCaller(ctx, duet.Caller{UserID: reg.Owner, Source: SourceCatalogSync})
		_, err = s.a.MCPClient.Sync(sctx, reg.Owner, reg.ServerKey)
		if err != nil {
			s.a.Logger.WarnContext(ctx, "catalog sync: a registered MCP server could not be synced", "owner", reg.Owner, "server", reg.Name, "code", duet.ErrorCode(err), "err", duet.ErrorMessage(err))
		}
		if s.Synced != nil {
			s.Synced(reg, err)
		}
	}
	return n
}
