package browser

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sample"
)

// TestCheckAfterFillLandsOnTheCheckbox: in the lab's checkout form, the
// email field shows a hint when it loses the focus, which moves the terms
// checkbox down. A fill leaves the focus in the field, so the press of the
// check that follows blurs it and moves the checkbox between the press and
// the release: the click would go to another element and the checkbox
// would stay unchecked. The guard of the click sees it and clicks again.
func TestCheckAfterFillLandsOnTheCheckbox(t *testing.T) {
	t.Parallel()
	shop, stop, err := sample.StartShop(t.Context(), "127.0.0.1:0", sample.NewOrders())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	s := newSession(t, sharedPool(t), "desktop")
	ctx := testCtx(t, 30*time.Second)
	if err := s.Open(ctx, shop+"/lab/form"); err != nil {
		t.Fatal(err)
	}
	terms := Target{Locator: &Locator{CSS: "#terms"}}
	for _, a := range []struct {
		t Target
		a Action
	}{
		{Target{Locator: &Locator{CSS: "#email"}}, Action{Kind: ActFill, Value: "not-an-email"}},
		{terms, Action{Kind: ActCheck}},
	} {
		if err := s.Act(ctx, a.t, a.a); err != nil {
			t.Fatalf("%s %s: %v", a.a.Kind, a.t, err)
		}
	}
	if hint, err := s.Text(ctx, "#email-hint"); err != nil || hint != "Enter an email address" {
		t.Fatalf("email hint: %q, %v; want the hint shown (the checkbox moved)", hint, err)
	}
	if got, err := s.Query(ctx, terms, Query{Kind: "checked"}); err != nil || !got.Has {
		t.Fatalf("terms checked: %v, %v; want true", got.Has, err)
	}
	if got, err := s.Query(ctx, Target{Locator: &Locator{CSS: "#pay"}}, Query{Kind: "enabled"}); err != nil || !got.Has {
		t.Errorf("pay enabled: %v, %v; want true (the change event of the checkbox)", got.Has, err)
	}
}

// hitPages are the pages of TestClickThatWouldMiss.
var hitPages = map[string]string{
	// The press on the button shows a cover over it, until the release
	// has been seen: the release and the click would reach the cover,
	// never the button.
	"/cover": htmlPage("Cover", `<style>#cover { position: absolute; left: 0; top: 0; width: 300px; height: 100px; background: #eee; display: none }</style>`,
		`<button id="go" style="width: 200px; height: 40px">Go</button><div id="cover"></div><p id="log"></p>
<script>
const log = (s) => { document.getElementById('log').textContent += s + ';'; };
document.getElementById('go').addEventListener('mousedown', () => {
	const c = document.getElementById('cover');
	c.style.display = 'block';
});
addEventListener('mouseup', () => setTimeout(() => { document.getElementById('cover').style.display = 'none'; }, 0), true);
document.getElementById('go').addEventListener('click', () => log('go'));
document.getElementById('cover').addEventListener('click', () => log('cover'));
document.body.addEventListener('click', (e) => log('body:' + e.target.id));
</script>`),
	// A menu item that acts on the press and goes: the rest of the click
	// reaches what was under it, and that is fine.
	"/menu": htmlPage("Menu", "",
		`<ul id="menu"><li><button id="item" style="width: 200px; height: 40px">Delete</button></li></ul><p id="log"></p>
<script>
document.getElementById('item').addEventListener('mousedown', () => {
	document.getElementById('log').textContent = 'deleted';
	document.getElementById('menu').remove();
});
</script>`),
}

// TestHoverAndDragThatWouldMiss: a hover or a drag whose events would
// reach another element — a cover the page shows over the target as the
// pointer arrives, or as the drag's press begins — fails within the step's
// time, naming that element, and the page sees no hover of the target (no
// mouseover) and no drag (no dragstart, no drop); with nothing in the
// way, both still work.
func TestHoverAndDragThatWouldMiss(t *testing.T) {
	t.Parallel()
	const cover = `<style>#cover { position: absolute; left: 0; top: 0; width: 400px; height: 200px; background: #eee; display: none }</style>`
	pages := map[string]string{
		"/hover": htmlPage("Hover", cover, `<button id="menu" style="width: 200px; height: 40px">Menu</button><div id="cover"></div><p id="log"></p>
<script>
const menu = document.getElementById('menu');
menu.addEventListener('pointerover', () => { if (location.hash === '#cover') document.getElementById('cover').style.display = 'block'; });
menu.addEventListener('mouseover', () => { document.getElementById('log').textContent += 'hover;'; });
</script>`),
		"/drag": htmlPage("Drag", cover, `<div id="card" draggable="true" style="width: 200px; height: 40px; background: #ccf">Card</div>
<div id="done" style="margin-top: 220px; width: 200px; height: 60px; background: #cfc">Done</div><div id="cover"></div><p id="log"></p>
<script>
const log = (s) => { document.getElementById('log').textContent += s + ';'; };
const card = document.getElementById('card'), done = document.getElementById('done');
card.addEventListener('pointerdown', () => { if (location.hash === '#cover') document.getElementById('cover').style.display = 'block'; });
card.addEventListener('dragstart', (e) => { e.dataTransfer.setData('text/plain', 'card'); log('dragstart'); });
done.addEventListener('dragover', (e) => e.preventDefault());
done.addEventListener('drop', (e) => { e.preventDefault(); log('drop:' + e.dataTransfer.getData('text/plain')); });
</script>`),
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(site.Close)
	s := newSession(t, sharedPool(t), "desktop")
	ctx := testCtx(t, 60*time.Second)
	css := func(sel string) Target { return Target{Locator: &Locator{CSS: sel}} }
	drag := Action{Kind: ActDrag, To: &Locator{CSS: "#done"}}
	for _, tc := range []struct {
		path string
		a    Action
		what string
		want string // the log with nothing in the way
	}{
		{"/hover", Action{Kind: ActHover}, "the hover", "hover;"},
		{"/drag", drag, "the drag", "dragstart;drop:card;"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			open(t, s, site, tc.path+"#cover")
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			target := "#menu"
			if tc.a.Kind == ActDrag {
				target = "#card"
			}
			err := s.Act(sctx, css(target), tc.a)
			wantCode(t, err, duet.CodeStepTimeout, "another element would receive "+tc.what, `<div id="cover">`)
			if got, err := s.Text(ctx, "#log"); err != nil || got != "" {
				t.Errorf("the page saw %q, %v; want nothing", got, err)
			}

			open(t, s, site, tc.path)
			if err := s.Act(ctx, css(target), tc.a); err != nil {
				t.Fatalf("with nothing in the way: %v", err)
			}
			if err := s.WaitFor(ctx, WaitCondition{Selector: "#log", Text: tc.want, Timeout: 10 * time.Second}); err != nil {
				got, _ := s.Text(ctx, "#log")
				t.Errorf("with nothing in the way the page saw %q, want %q: %v", got, tc.want, err)
			}
		})
	}
}

// TestClickThatWouldMiss: a click whose release would reach another
// element fails, within the step's time, naming that element, and no
// handler of the page sees a click at all; a target that acts on the press
// and leaves the page is clicked once, without error.
func TestClickThatWouldMiss(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := hitPages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(site.Close)
	s := newSession(t, sharedPool(t), "desktop")
	ctx := testCtx(t, 30*time.Second)
	open(t, s, site, "/cover")
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := s.Act(sctx, Target{Locator: &Locator{CSS: "#go"}}, Action{Kind: ActClick})
	wantCode(t, err, duet.CodeStepTimeout, "another element would receive the click", `<div id="cover">`)
	if got, err := s.Text(ctx, "#log"); err != nil || got != "" {
		t.Errorf("the page saw clicks %q, %v; want none", got, err)
	}

	open(t, s, site, "/menu")
	if err := s.Act(ctx, Target{Locator: &Locator{CSS: "#item"}}, Action{Kind: ActClick}); err != nil {
		t.Fatalf("click a menu item that acts on the press: %v", err)
	}
	if got, err := s.Text(ctx, "#log"); err != nil || got != "deleted" {
		t.Errorf("log: %q, %v; want deleted", got, err)
	}
}
