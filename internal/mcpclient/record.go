package mcpclient

import (
	"context"
	"errors"
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
	// maxPendingRecords bounds the records kept for the next attempt while
	// the database is unavailable or too slow (as the audit writer does).
	maxPendingRecords = 100_000
)

// transient reports whether a failed store may succeed when tried again: the
// database away for a moment, or a write that did not finish in its time.
func transient(err error) bool {
	return duet.ErrorCode(err) == duet.CodeUnavailable || errors.Is(err, context.DeadlineExceeded)
}

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
	// pending holds the records of a store that failed for a transient
	// reason; they go first at the next attempt. Each transaction writes at
	// most recordBatch records, so one slow commit cannot hold thousands.
	var pending []*duet.Invocation
	waiting := false
	store := func() {
		batch := append(pending, r.take()...)
		pending = nil
		for len(batch) > 0 {
			n := min(len(batch), recordBatch)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := r.store.AppendInvocations(ctx, batch[:n])
			cancel()
			if err != nil {
				if transient(err) && len(batch) <= maxPendingRecords {
					if !waiting {
						r.log.Warn("MCP invocation records wait for the database", "records", len(batch), "err", err)
					}
					waiting = true
					pending = batch
					return
				}
				r.log.Error("storing MCP invocation records", "records", n, "err", err)
			}
			batch = batch[n:]
		}
		waiting = false
	}
	for {
		select {
		case <-r.stop:
			// A last few attempts for what the database refused a moment ago.
			for attempt := 0; ; attempt++ {
				store()
				if len(pending) == 0 {
					return
				}
				if attempt == 2 {
					r.log.Error("MCP invocation records not stored at shutdown", "records", len(pending))
					return
				}
				time.Sleep(min(r.interval, time.Second))
			}
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

// flush waits until every record queued so far is stored, or kept for
// the next attempt when the database is unavailable.
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
