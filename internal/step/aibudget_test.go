package step_test

import (
	"bytes"
	"encoding/base64"
	"image/jpeg"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/llm/llmtest"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// TestAIUserDayBudget: each user's AI steps share a token budget per UTC
// day, counted in the database (DUET_LLM_USER_DAY_TOKENS): alice's first
// run of the day passes, her second is refused before the model is called,
// naming the budget; bob's run that day and alice's the next day pass.
func TestAIUserDayBudget(t *testing.T) {
	t.Parallel()
	base := sampletest.Shop(t)
	srv, opts, _ := aiModel(t,
		llmtest.Reply(`{"pass": true, "reason": "paid"}`).WithUsage(llm.Usage{PromptTokens: 7000, CompletionTokens: 100, TotalTokens: 7100}),
		llmtest.Reply(`{"pass": true, "reason": "paid"}`),
		llmtest.Reply(`{"pass": true, "reason": "paid"}`))
	var now atomic.Pointer[time.Time]
	today := time.Date(2026, 12, 2, 23, 50, 0, 0, time.FixedZone("UTC+5", 5*3600)) // 18:50 UTC
	now.Store(&today)
	opts.AI.UserDayTokens = 8000
	opts.AI.Now = func() time.Time { return *now.Load() }
	c := newCaseOnDB(t, base, "      - open: /order?orderId=A1001\n      - aiAssert: the order is paid\n", opts)
	c.opts.AI.Usage = c.db

	if x := c.run("alice"); x.Status != duet.StatusPassed {
		t.Fatalf("alice's first run: %s", describe(x))
	}
	u, err := c.db.FindLLMUsage(t.Context(), "alice", "2026-12-02")
	if err != nil || u.Tokens != 7100 || u.Calls != 1 {
		t.Fatalf("alice's day after one call: %+v %v (want what the call spent, 7100)", u, err)
	}
	x := c.run("alice")
	if r := x.Results[1]; r.ErrorCode != duet.CodeLLMBudgetExceeded || !strings.Contains(r.ErrorMessage, "alice's daily token budget of 8000") || !strings.Contains(r.ErrorMessage, "used 7100 on 2026-12-02") {
		t.Fatalf("alice's second run: %s", describe(x))
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d model calls after the refused run, want 1", n)
	}
	if x := c.run("bob"); x.Status != duet.StatusPassed {
		t.Fatalf("bob's run: %s", describe(x))
	}
	tomorrow := today.Add(time.Hour) // 19:50 UTC on the 2nd is still the 2nd
	now.Store(&tomorrow)
	if x := c.run("alice"); x.Results[1].ErrorCode != duet.CodeLLMBudgetExceeded {
		t.Fatalf("an hour later, still the same UTC day: %s", describe(x))
	}
	tomorrow = today.Add(6 * time.Hour) // 00:50 UTC on the 3rd
	now.Store(&tomorrow)
	if x := c.run("alice"); x.Status != duet.StatusPassed {
		t.Fatalf("alice's run the next UTC day: %s", describe(x))
	}
	if srv.Remaining() != 0 {
		t.Errorf("%d scripted answers left", srv.Remaining())
	}
}

// TestAIRunTimeBudget: the AI steps of a run share how long they may wait
// for the model (DUET_LLM_RUN_TIME): a call still unanswered when it runs
// out is cut short, and the next step is refused without a call.
func TestAIRunTimeBudget(t *testing.T) {
	t.Parallel()
	base := sampletest.Shop(t)
	srv, opts, _ := aiModel(t, llmtest.Reply(`{"pass": true, "reason": "late"}`).WithDelay(time.Hour))
	opts.AI.RunTime = 200 * time.Millisecond
	x := runStepsWith(t, base, "      - open: /order?orderId=A1001\n      - aiAssert: the order is paid\n        soft: true\n      - aiAssert: the order is paid\n", opts)
	if r := x.Results[1]; r.ErrorCode != duet.CodeLLMBudgetExceeded || !strings.Contains(r.ErrorMessage, "model time budget of 200ms ran out while the model answered") {
		t.Errorf("the first step: %s", describe(x))
	}
	if r := x.Results[2]; r.ErrorCode != duet.CodeLLMBudgetExceeded || !strings.Contains(r.ErrorMessage, "the run's model time budget of 200ms is spent") {
		t.Errorf("the second step: %s", describe(x))
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
}

// TestAIVision: with vision on, the model is also shown a screenshot of
// the page as an image_url content part (a JPEG data URL within the
// bounds), which the transcript names without its bytes; off (the
// default), no image is sent.
func TestAIVision(t *testing.T) {
	t.Parallel()
	base := sampletest.Shop(t)
	for _, vision := range []bool{false, true} {
		srv, opts, dir := aiModel(t, llmtest.Reply(`{"pass": true, "reason": "paid"}`))
		opts.AI.Vision = vision
		x := runStepsWith(t, base, "      - open: /order?orderId=A1001\n      - aiAssert: the order is paid\n", opts)
		if x.Status != duet.StatusPassed {
			t.Fatalf("vision %v: %s", vision, describe(x))
		}
		req := srv.Requests()[0]
		var images []string
		for _, m := range req.Messages {
			images = append(images, m.Images...)
		}
		if !vision {
			if len(images) != 0 || bytes.Contains(srv.Received()[0].Body, []byte("image_url")) {
				t.Errorf("vision off, and the model was sent an image")
			}
			continue
		}
		if len(images) != 1 || req.Messages[1].Role != llm.RoleUser || len(req.Messages[1].Images) != 1 {
			t.Fatalf("vision on: want one image in the user message, got %d", len(images))
		}
		data, ok := strings.CutPrefix(images[0], "data:image/jpeg;base64,")
		if !ok {
			t.Fatalf("the image is not a JPEG data URL: %.40s", images[0])
		}
		raw, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("the image is not a JPEG: %v", err)
		}
		b := img.Bounds()
		t.Logf("the model was shown a %d×%d JPEG of %d bytes", b.Dx(), b.Dy(), len(raw))
		if max(b.Dx(), b.Dy()) > 1280 || len(raw) > 256<<10 || b.Dx() < 100 {
			t.Errorf("the image is out of bounds: %d×%d, %d bytes", b.Dx(), b.Dy(), len(raw))
		}
		tr := transcript(t, dir, x.Results[1])
		if strings.Contains(tr, data[:64]) || !strings.Contains(tr, "a screenshot of the page (JPEG") {
			t.Errorf("the transcript keeps the image's bytes, or does not say it was shown:\n%.2000s", tr)
		}
	}
}
