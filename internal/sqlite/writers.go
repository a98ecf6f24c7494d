package sqlite

import (
	"context"
	"time"
)

// writerQueue makes a process's writers take SQLite's write lock one at a
// time, in the order they asked for it. SQLite itself lets a writer that
// finds the lock taken sleep and try again until busy_timeout: with more
// writers than that handler wakes in time for, as a burst of a hundred
// concurrent run starts on eight connections is, the unlucky one fails
// with SQLITE_BUSY however short each write is, because nobody queues.
// Writers waiting here queue in Go (a channel's senders are served in
// order) and are bounded by their context only; each then finds the lock
// free unless another process holds it, which busy_timeout still covers.
type writerQueue struct {
	turn chan struct{}
	// patience is how long a writer waits its turn before it goes to
	// SQLite's lock anyway (busy_timeout then decides): a write made while
	// its own goroutine holds the turn — none is known — stalls for this
	// long instead of for ever.
	patience time.Duration
}

func newWriterQueue() *writerQueue {
	return &writerQueue{turn: make(chan struct{}, 1), patience: 2 * time.Minute}
}

// wait takes the turn and returns the function that gives it back, or the
// context's error. A writer that waited longer than patience goes on
// without the turn (its release is a no-op).
func (w *writerQueue) wait(ctx context.Context) (release func(), err error) {
	select {
	case w.turn <- struct{}{}:
		return w.release, nil
	default:
	}
	t := time.NewTimer(w.patience)
	defer t.Stop()
	select {
	case w.turn <- struct{}{}:
		return w.release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return func() {}, nil
	}
}

func (w *writerQueue) release() { <-w.turn }
