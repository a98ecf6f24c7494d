package fast_test

import (
	"context"
	"sync"
	"testing"

	"github.com/duet-test/duet/internal/mcpserver/fast"
)

// TestOwedWaitsForTheLastAnswer: Wait returns once owing reports none —
// looking again at each Answered — or at Close, or when ctx ends; with
// nothing owed it returns at once.
func TestOwedWaitsForTheLastAnswer(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	owed := 0
	owing := func() bool { mu.Lock(); defer mu.Unlock(); return owed > 0 }
	answer := func(o *fast.Owed) { mu.Lock(); owed--; mu.Unlock(); o.Answered() }

	t.Run("nothing owed", func(t *testing.T) {
		fast.NewOwed().Wait(context.Background(), func() bool { return false })
	})

	t.Run("answers", func(t *testing.T) {
		o := fast.NewOwed()
		owed = 2
		looked := make(chan struct{}, 8)
		done := make(chan struct{})
		go func() {
			o.Wait(context.Background(), func() bool { looked <- struct{}{}; return owing() })
			close(done)
		}()
		for range 2 {
			select {
			case <-looked: // owing is asked first, then again after each answer
			case <-done:
				t.Fatalf("Wait returned with %d answers still owed", owed)
			}
			answer(o)
		}
		<-done
	})

	t.Run("close", func(t *testing.T) {
		o := fast.NewOwed()
		done := make(chan struct{})
		go func() { o.Wait(context.Background(), func() bool { return true }); close(done) }()
		o.Close()
		o.Close() // twice is fine
		<-done
		o.Wait(context.Background(), func() bool { return true }) // and stays closed
	})

	t.Run("ctx", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		fast.NewOwed().Wait(ctx, func() bool { return true })
	})
}
