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
//
// A record is appended to a queue under a mutex; the storing goroutine
// wakes on its interval, when a batch's worth is queued, on flush and on
// close — not for every record (a channel send woke it once per call,
// which cost a scheduler round trip on every invoke()). What is at risk on
// a crash is unchanged: the records of the last interval.
type recorder struct {
	store    duet.MCPClientStore
	log      *slog.Logger
	interval time.Duration

	mu      sync.Mutex
	room    *sync.Cond // signalled when the queue was taken
	queue   []*duet.Invocation
	closed  bool
	wake    chan struct{} // a batch is ready (capacity 1)
	flushCh chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

const (
	// recordBatch queued records wake the storing goroutine at once.
	recordBatch = 256
	// maxQueuedRecords makes add wait for the store (records are never
	// dropped).
	maxQueuedRecords = 4096
)

func newRecorder(store duet.MCPClientStore, interval time.Duration, log *slog.Logger) *recorder {
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	r := &recorder{store: store, log: log, interval: interval, wake: make(chan struct{}, 1),
		flushCh: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	r.room = sync.NewCond(&r.mu)
	go r.loop()
	return r
}

// add queues rec; when the queue is full it waits (records are never
// dropped). After close, records are stored synchronously.
func (r *recorder) add(rec *duet.Invocation) {
	r.mu.Lock()
	for !r.closed && len(r.queue) >= maxQueuedRecords {
		r.room.Wait()
	}
	if r.closed {
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.store.AppendInvocations(ctx, []*duet.Invocation{rec}); err != nil {
			r.log.Error("storing an MCP invocation record", "err", err)
		}
		return
	}
	r.queue = append(r.queue, rec)
	full := len(r.queue) >= recordBatch
	r.mu.Unlock()
	if full {
		select {
		case r.wake <- struct{}{}:
		default: // already woken
		}
	}
}

// take returns the queued records and empties the queue.
func (r *recorder) take() []*duet.Invocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	batch := r.queue
	r.queue = nil
	r.room.Broadcast()
	return batch
}

func (r *recorder) loop() {
	defer close(r.done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	store := func() {
		batch := r.take()
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.store.AppendInvocations(ctx, batch); err != nil {
			r.log.Error("storing MCP invocation records", "records", len(batch), "err", err)
		}
	}
	for {
		select {
		case <-r.stop:
			store()
			return
		case <-r.wake:
			store()
		case <-t.C:
			store()
		case ack := <-r.flushCh:
			store()
			close(ack)
		}
	}
}

// flush waits until every record queued so far is stored.
func (r *recorder) flush() {
	ack := make(chan struct{})
	select {
	case r.flushCh <- ack:
		<-ack
	case <-r.done:
	}
}

// close stores what is queued and stops the goroutine; records added
// afterwards are stored synchronously.
func (r *recorder) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.room.Broadcast()
	r.mu.Unlock()
	close(r.stop)
	<-r.done
}
