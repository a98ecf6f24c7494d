package browser

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
)

// TestSessionsNotedPastTheBound: while adoptions keep overlapping, more
// sessions than maxSentOn are sent on; the one an adoption waits for,
// sent on last, is still noted, and the wait ends at once. (Noting stopped
// at the bound before: that adoption waited out its bound.)
func TestSessionsNotedPastTheBound(t *testing.T) {
	h := &holder{}
	h.expectAttach("page")
	defer h.forgetAttach("page")
	for i := range maxSentOn + 100 {
		h.noteSent(target.SessionID(fmt.Sprintf("other-%d", i)))
	}
	h.noteSent("mine")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.awaitChromedp(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	if len(h.sentOn) > maxSentOn || len(h.sentOrder) != len(h.sentOn) {
		t.Fatalf("%d sessions noted (%d in order), bound %d", len(h.sentOn), len(h.sentOrder), maxSentOn)
	}
	if h.sentOn["other-0"] {
		t.Fatal("the oldest session noted is still noted past the bound")
	}
}
