// Package audit writes the audit trail: records are queued and stored in
// batches by one goroutine, so a call never waits on the database for its
// audit row, and nothing queued is lost on a clean shutdown.
//
// A call that changes data does not depend on this writer for its row: the
// store writes it in the change's own transaction (duet.AuditIntent), and
// the writer only completes it — a record handed to Record with an ID
// stores the call's final outcome, duration and result size in that row.
// What a crash can lose is therefore bounded to the records of calls that
// changed nothing (reads, refusals) queued since the last flush (every
// interval: 100 ms by default), and the completions of rows already
// stored.
package audit

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/duet-test/duet"
)

// maxPending bounds the records kept while the database is unavailable.
const maxPending = 100_000

// Writer batches audit records into a store. It implements catalog.Auditor.
type Writer struct {
	store    duet.AuditStore
	log      *slog.Logger
	ch       chan *duet.AuditRecord
	flushCh  chan chan struct{}
	done     chan struct{}
	interval time.Duration
	once     sync.Once
	mu       sync.RWMutex
	closed   bool
}

// NewWriter starts a writer that stores at least every interval (0 means
// 100ms), or sooner when 256 records are waiting.
func NewWriter(store duet.AuditStore, interval time.Duration, log *slog.Logger) *Writer {
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Writer{store: store, log: log, ch: make(chan *duet.AuditRecord, 4096), flushCh: make(chan chan struct{}), done: make(chan struct{}), interval: interval}
	go w.loop()
	return w
}

// Record queues rec: a new record, or — rec.ID set — the completion of
// the record a change stored (duet.AuditIntent). When the queue is full it
// waits: audit rows are never dropped. After Close, records are stored
// synchronously.
func (w *Writer) Record(rec *duet.AuditRecord) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if rec.ID != 0 {
			err = w.store.CompleteAudit(ctx, []*duet.AuditRecord{rec})
		} else {
			err = w.store.AppendAudit(ctx, []*duet.AuditRecord{rec})
		}
		if err != nil {
			w.log.Error("storing an audit record", "err", err)
		}
		return
	}
	w.ch <- rec
}

func (w *Writer) loop() {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	var batch, completions []*duet.AuditRecord
	waiting := false // the database was unavailable at the last flush
	// store stores recs with fn and reports whether they are done with:
	// stored, or failed for good (logged). A database away for a moment (a
	// restart, a failover) keeps them for the next flush, up to
	// maxPending of them.
	store := func(recs []*duet.AuditRecord, fn func(context.Context, []*duet.AuditRecord) error) bool {
		if len(recs) == 0 {
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := fn(ctx, recs)
		if err == nil {
			return true
		}
		if duet.ErrorCode(err) == duet.CodeUnavailable && len(recs) < maxPending {
			if !waiting {
				w.log.Warn("audit records wait for the database", "records", len(recs), "err", err)
			}
			waiting = true
			return false
		}
		w.log.Error("storing audit records", "records", len(recs), "err", err)
		return true
	}
	flush := func() {
		if store(batch, w.store.AppendAudit) {
			batch = nil
		} else {
			return
		}
		if store(completions, w.store.CompleteAudit) {
			completions = nil
		} else {
			return
		}
		waiting = false
	}
	add := func(rec *duet.AuditRecord) {
		if rec.ID != 0 {
			completions = append(completions, rec)
		} else {
			batch = append(batch, rec)
		}
	}
	for {
		select {
		case rec, ok := <-w.ch:
			if !ok {
				flush()
				return
			}
			add(rec)
			if len(batch)+len(completions) >= 256 {
				flush()
			}
		case <-t.C:
			flush()
		case ack := <-w.flushCh:
			for drained := false; !drained; {
				select {
				case rec, ok := <-w.ch:
					if !ok {
						drained = true
						break
					}
					add(rec)
				default:
					drained = true
				}
			}
			flush()
			close(ack)
		}
	}
}

// Flush waits until every record queued so far is stored.
func (w *Writer) Flush() {
	ack := make(chan struct{})
	select {
	case w.flushCh <- ack:
		<-ack
	case <-w.done:
	}
}

// Close stores everything queued and stops the writer.
func (w *Writer) Close() {
	w.once.Do(func() {
		w.mu.Lock()
		w.closed = true
		close(w.ch)
		w.mu.Unlock()
		<-w.done
	})
}
