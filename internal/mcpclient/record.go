package mcpclient

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/duet-test/duet"
)

// recorder stores invocation records in batches from one goroutine, so a
// call never waits on the database for its record, and nothing queued is
// lost on Close.
type recorder struct {
	store    duet.MCPClientStore
	log      *slog.Logger
	interval time.Duration
	ch       chan *duet.Invocation
	flushCh  chan chan struct{}
	done     chan struct{}
	mu       sync.RWMutex
	closed   bool
}

func newRecorder(store duet.MCPClientStore, interval time.Duration, log *slog.Logger) *recorder {
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	r := &recorder{store: store, log: log, interval: interval, ch: make(chan *duet.Invocation, 4096),
		flushCh: make(chan chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

// add queues rec; when the queue is full it waits (records are never
// dropped). After close, records are stored synchronously.
func (r *recorder) add(rec *duet.Invocation) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.store.AppendInvocations(ctx, []*duet.Invocation{rec}); err != nil {
			r.log.Error("storing an MCP invocation record", "err", err)
		}
		return
	}
	r.ch <- rec
}

func (r *recorder) loop() {
	defer close(r.done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	var batch []*duet.Invocation
	store := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.store.AppendInvocations(ctx, batch); err != nil {
			r.log.Error("storing MCP invocation records", "records", len(batch), "err", err)
		}
		batch = nil
	}
	for {
		select {
		case rec, ok := <-r.ch:
			if !ok {
				store()
				return
			}
			batch = append(batch, rec)
			if len(batch) >= 256 {
				store()
			}
		case <-t.C:
			store()
		case ack := <-r.flushCh:
		drain:
			for {
				select {
				case rec, ok := <-r.ch:
					if !ok {
						break drain
					}
					batch = append(batch, rec)
				default:
					break drain
				}
			}
			store()
			close(ack)
		}
	}
}

func (r *recorder) flush() {
	ack := make(chan struct{})
	select {
	case r.flushCh <- ack:
		<-ack
	case <-r.done:
	}
}

func (r *recorder) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.ch)
	r.mu.Unlock()
	<-r.done
}
