package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// labPages are the pages of the locator and action tests.
var labPages = map[string]string{
	"/find": htmlPage("Find", "", `
<header><nav aria-label="Main"><a href="/find">Home</a> <a href="/cart">Cart</a></nav></header>
<main>
<h1>Shop</h1>
<section aria-label="Blue mug" class="card"><h2>Blue mug</h2><button data-testid="add-blue">Add to cart</button><span class="price">12 €</span></section>
<section aria-label="Red mug" class="card"><h2>Red mug</h2><button data-testid="add-red">Add to cart</button><span class="price">9 €</span><span class="badge">sale</span></section>
<form>
  <label for="email">Email address</label><input id="email" placeholder="you@example.com">
  <label>Quantity <input id="qty" type="number" value="1"></label>
  <input id="code" aria-label="Coupon code" data-test="coupon">
  <img alt="Company logo" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="10" height="10">
  <span title="Help text">?</span>
  <button type="button" id="go">Sign <b>in</b></button>
  <button type="button" id="hiddenbtn" style="display:none">Sign in later</button>
</form>
<p id="out"></p>
</main>
<script>
for (const b of document.querySelectorAll('button')) b.addEventListener('click', () => { document.getElementById('out').textContent = 'clicked ' + (b.dataset.testid || b.id); });
</script>`),

	// A button that slides in (an animation) over a trap that takes a
	// click made too early; one covered by a banner that goes; one that
	// is enabled late; one that appears late.
	"/wait": htmlPage("Wait", `<style>
@keyframes slide { from { left: 0px } to { left: 300px } }
#moving { position: absolute; top: 10px; left: 300px; animation: slide 700ms linear; width: 120px; height: 40px }
#swaying { position: absolute; top: 400px; left: 500px }
#trap { position: absolute; top: 10px; left: 0px; width: 600px; height: 40px; background: #fee }
#covered { position: absolute; top: 100px; left: 10px }
#banner { position: absolute; top: 90px; left: 0; width: 400px; height: 60px; background: #eee }
</style>`, `<div id="trap">trap</div><button id="moving">Moving</button>
<button id="covered">Covered</button><div id="banner">Cookies</div>
<button id="swaying">Never still</button>
<button id="late-enabled" disabled style="position:absolute; top: 200px">Later</button>
<p id="log" style="position:absolute; top: 300px"></p>
<script>
const log = (s) => { document.getElementById('log').textContent += s + ';'; };
document.getElementById('trap').addEventListener('click', () => log('trap'));
for (const id of ['moving', 'covered', 'late-enabled']) document.getElementById(id).addEventListener('click', () => log(id));
setTimeout(() => document.getElementById('banner').remove(), 600);
let sway = 0;
const step = () => { sway = (sway + 37) % 300; document.getElementById('swaying').style.left = (500 + sway) + 'px'; requestAnimationFrame(step); };
requestAnimationFrame(step);
setTimeout(() => { document.getElementById('late-enabled').disabled = false; }, 500);
setTimeout(() => { const b = document.createElement('button'); b.id = 'late'; b.textContent = 'Appeared'; b.style = 'position:absolute; top: 250px'; b.onclick = () => log('late'); document.body.appendChild(b); }, 400);
</script>`),

	"/actions": htmlPage("Actions", "", `
<button id="dbl">Double</button>
<div id="ctx" style="width:100px;height:30px;background:#def">Right here</div>
<label><input type="checkbox" id="terms"> I agree</label>
<div role="checkbox" aria-checked="false" id="fancy" tabindex="0">Fancy</div>
<input id="name" value="old text"> <input id="ro" readonly value="fixed">
<label for="file">Photo</label><input type="file" id="file">
<input type="file" id="files" multiple aria-label="Attachments">
<select id="size" aria-label="Size"><option value="s">Small</option><option value="l">Large</option></select>
<div style="height: 1500px"></div>
<p id="far">Far below</p>
<div id="src" draggable="true" style="width:80px;height:40px;background:#cfc">Card</div>
<div id="dst" style="width:200px;height:80px;background:#ccf">Done</div>
<p id="log"></p>
<script>
const log = (s) => { document.getElementById('log').textContent += s + ';'; };
document.getElementById('dbl').addEventListener('dblclick', () => log('dblclick'));
document.getElementById('ctx').addEventListener('contextmenu', (e) => { e.preventDefault(); log('contextmenu'); });
const fancy = document.getElementById('fancy');
fancy.addEventListener('click', () => fancy.setAttribute('aria-checked', fancy.getAttribute('aria-checked') === 'true' ? 'false' : 'true'));
for (const id of ['file', 'files']) document.getElementById(id).addEventListener('change', async (e) => {
  for (const f of e.target.files) log(id + ':' + f.name + ':' + f.type + ':' + (await f.text()));
});
document.getElementById('name').addEventListener('focus', () => log('focus'));
document.getElementById('name').addEventListener('blur', () => log('blur'));
const dst = document.getElementById('dst');
document.getElementById('src').addEventListener('dragstart', (e) => e.dataTransfer.setData('text/plain', 'card'));
dst.addEventListener('dragover', (e) => e.preventDefault());
dst.addEventListener('drop', (e) => { e.preventDefault(); log('drop:' + e.dataTransfer.getData('text/plain')); });
</script>`),

	"/frames": htmlPage("Frames", "", `<h1>Outer</h1>
<iframe id="same" src="/inner" style="width:400px;height:150px;border:5px solid #999;margin:20px"></iframe>
<iframe id="other" style="width:400px;height:150px"></iframe>
<script>document.getElementById('other').src = location.protocol + '//localhost:' + location.port + '/inner?other=1';</script>`),
	"/inner": htmlPage("Inner", "", `<button id="in">Inside</button><p id="res"></p>
<script>document.getElementById('in').onclick = () => { document.getElementById('res').textContent = 'inner clicked ' + location.hostname; };</script>`),

	"/popup": htmlPage("Opener", "", `<a id="open" href="/inner?popup=1" target="_blank">Open help</a>
<button id="win" onclick="window.open('/find', 'w2')">Window</button>
<button id="dlg" onclick="document.getElementById('r').textContent = 'confirm=' + confirm('Delete the mug?')">Delete</button>
<button id="ask" onclick="document.getElementById('r').textContent = 'prompt=' + prompt('Your name?', 'guest')">Ask</button>
<p id="r"></p>`),
}

// newLab starts the site of labPages.
func newLab(tb testing.TB) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := labPages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

func ptrInt(i int) *int { return &i }

// TestLocators: each kind of locator finds the element a person means,
// in Chromium.
func TestLocators(t *testing.T) {
	t.Parallel()
	s := newSession(t, sharedPool(t), "desktop")
	lab := newLab(t)
	open(t, s, lab, "/find")
	ctx := testCtx(t, 30*time.Second)
	for _, tt := range []struct {
		name string
		loc  Locator
		want string // the text (or value) of the element found
	}{
		{"role and name", Locator{Role: "heading", Name: "blue"}, "Blue mug"},
		{"role and exact name", Locator{Role: "button", Name: "Sign in", Exact: true}, "Sign in"},
		{"role and name by pattern", Locator{Role: "link", Name: "/^ca/i"}, "Cart"},
		{"role of an image", Locator{Role: "img"}, ""},
		{"text", Locator{Text: "red MUG", Within: &Locator{CSS: "section"}}, "Red mug"},
		{"text across elements", Locator{Text: "Sign in", Exact: true}, "Sign in"},
		{"label", Locator{Label: "Email"}, ""},
		{"wrapping label", Locator{Label: "Quantity"}, "1"},
		{"aria-label", Locator{Label: "coupon", Exact: false}, ""},
		{"placeholder", Locator{Placeholder: "you@"}, ""},
		{"alt", Locator{Alt: "logo"}, ""},
		{"title", Locator{Title: "Help text", Exact: true}, "?"},
		{"test id", Locator{TestID: "add-red"}, "Add to cart"},
		{"test id attribute", Locator{TestID: "coupon", TestIDAttr: "data-test"}, ""},
		{"xpath", Locator{XPath: "//section[2]//h2"}, "Red mug"},
		{"within", Locator{Role: "button", Within: &Locator{Role: "region", Name: "Red mug"}}, "Add to cart"},
		{"has", Locator{CSS: "section", Has: &Locator{CSS: ".badge"}}, "Red mug Add to cart9 €sale"},
		{"hasText", Locator{CSS: ".card", HasText: "blue"}, "Blue mug Add to cart12 €"},
		{"nth", Locator{CSS: ".price", Nth: ptrInt(-1)}, "9 €"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tg := Target{Locator: &tt.loc}
			a, err := s.Query(ctx, tg, Query{Kind: "text"})
			if err != nil {
				t.Fatalf("Query(%s): %v", tg, err)
			}
			got := normSpace(a.Str)
			if got == "" {
				v, _ := s.Query(ctx, tg, Query{Kind: "value"})
				got = v.Str
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("%s: got %q, want %q", tg, got, tt.want)
			}
			n, err := s.Query(ctx, tg, Query{Kind: "count"})
			if err != nil || n.Count != 1 {
				t.Errorf("%s: count %d, %v; want 1", tg, n.Count, err)
			}
		})
	}
	// The accessibility tree leaves out the hidden button: role and name
	// find one, text finds both.
	if n, err := s.Query(ctx, Target{Locator: &Locator{Role: "button", Name: "sign in"}}, Query{Kind: "count"}); err != nil || n.Count != 1 {
		t.Errorf("role=button[name=sign in]: count %d, %v; want 1 (the hidden one is not in the accessibility tree)", n.Count, err)
	}
	if n, err := s.Query(ctx, Target{Locator: &Locator{Text: "sign in"}}, Query{Kind: "count"}); err != nil || n.Count != 2 {
		t.Errorf("text=sign in: count %d, %v; want 2", n.Count, err)
	}
	if err := s.Act(ctx, Target{Locator: &Locator{Role: "button", Name: "Add to cart", Within: &Locator{Role: "region", Name: "Blue"}}}, Action{Kind: ActClick}); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Query(ctx, Target{Locator: &Locator{CSS: "#out"}}, Query{Kind: "text"}); err != nil || a.Str != "clicked add-blue" {
		t.Errorf("after the click: %q, %v", a.Str, err)
	}
	// A bad locator is an INVALID_ARGUMENT at once.
	for _, l := range []Locator{{XPath: "//*["}, {Role: "buton"}, {Text: "/(/"}, {CSS: "a", Role: "link"}} {
		err := s.Act(ctx, Target{Locator: &l}, Action{Kind: ActClick})
		wantCode(t, err, duet.CodeInvalidArgument)
	}
}

// TestStrictness: a locator that matches several elements where one is
// needed fails at once with LOCATOR_AMBIGUOUS, listing what it matched with
// their roles and names; a bare CSS selector of the older methods takes the
// first, as it always did.
func TestStrictness(t *testing.T) {
	t.Parallel()
	s := newSession(t, sharedPool(t), "desktop")
	lab := newLab(t)
	open(t, s, lab, "/find")
	ctx := testCtx(t, 30*time.Second)
	start := time.Now()
	err := s.Act(ctx, Target{Locator: &Locator{Role: "button", Name: "add to cart"}}, Action{Kind: ActClick})
	wantCode(t, err, duet.CodeLocatorAmbiguous, `role=button[name="add to cart"] matches 2 elements`,
		`1. <button> role=button name="Add to cart"`, `2. <button> role=button name="Add to cart"`)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the ambiguity took %s: it must fail at once, not wait", d)
	}
	_, err = s.Query(ctx, Target{Locator: &Locator{CSS: ".price"}}, Query{Kind: "text"})
	wantCode(t, err, duet.CodeLocatorAmbiguous, `".price" matches 2 elements`, `text="12 €"`)
	if got, err := s.Text(ctx, ".price"); err != nil || got != "12 €" {
		t.Errorf("Text(.price) = %q, %v; want the first, 12 €", got, err)
	}
	if a, err := s.Query(ctx, Target{Locator: &Locator{CSS: ".price"}}, Query{Kind: "count"}); err != nil || a.Count != 2 {
		t.Errorf("count: %d, %v", a.Count, err)
	}
}

// TestActionability: a click waits until its element stops moving, is no
// longer covered, is enabled and is there, looking again as the page
// changes; an element that stays covered fails with the cover named.
func TestActionability(t *testing.T) {
	t.Parallel()
	s := newSession(t, sharedPool(t), "desktop")
	lab := newLab(t)
	open(t, s, lab, "/wait")
	ctx := testCtx(t, 30*time.Second)
	for _, id := range []string{"#moving", "#covered", "#late-enabled", "#late"} {
		if err := s.Act(ctx, Target{Locator: &Locator{CSS: id}}, Action{Kind: ActClick}); err != nil {
			t.Fatalf("click %s: %v", id, err)
		}
	}
	got, err := s.Text(ctx, "#log")
	if err != nil || got != "moving;covered;late-enabled;late;" {
		t.Errorf("the clicks landed on %q, %v; want moving;covered;late-enabled;late; (a click while the button moved hits the trap)", got, err)
	}
	open(t, s, lab, "/wait")
	// The budgets leave the page time to answer at least once on a busy
	// machine: the failure names the state the page last reported (with
	// no answer at all it could only say that the page did not answer).
	// So the cover here stays (the page's own banner goes after 600 ms),
	// and the button never stops.
	if _, err := s.Evaluate(ctx, `(() => { const b = document.createElement('div'); b.id = 'banner-stays'; b.textContent = 'Cookies';
  b.style = 'position:absolute; top: 90px; left: 0; width: 400px; height: 60px; background: #eee'; document.body.appendChild(b); return true })()`, nil, 0); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = s.Act(sctx, Target{Locator: &Locator{CSS: "#covered"}}, Action{Kind: ActClick})
	wantCode(t, err, duet.CodeStepTimeout, "covered by", "banner")
	sctx2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	err = s.Act(sctx2, Target{Locator: &Locator{Role: "button", Name: "Never still"}}, Action{Kind: ActClick})
	wantCode(t, err, duet.CodeStepTimeout, "still moving")
}

// TestActions: the actions of the element steps, in Chromium.
func TestActions(t *testing.T) {
	t.Parallel()
	s := newSession(t, sharedPool(t), "desktop")
	lab := newLab(t)
	open(t, s, lab, "/actions")
	ctx := testCtx(t, 60*time.Second)
	css := func(sel string) Target { return Target{Locator: &Locator{CSS: sel}} }
	act := func(tg Target, a Action) {
		t.Helper()
		if err := s.Act(ctx, tg, a); err != nil {
			t.Fatalf("%s %s: %v", a.Kind, tg, err)
		}
	}
	query := func(tg Target, q Query) Answer {
		t.Helper()
		a, err := s.Query(ctx, tg, q)
		if err != nil {
			t.Fatalf("query %s of %s: %v", q.Kind, tg, err)
		}
		return a
	}
	act(Target{Locator: &Locator{Role: "button", Name: "Double"}}, Action{Kind: ActDblClick})
	act(Target{Locator: &Locator{Text: "Right here"}}, Action{Kind: ActClick, Button: "right"})
	act(Target{Locator: &Locator{Label: "I agree"}}, Action{Kind: ActCheck})
	act(Target{Locator: &Locator{Label: "I agree"}}, Action{Kind: ActCheck}) // already checked: no click
	if !query(css("#terms"), Query{Kind: "checked"}).Has {
		t.Error("the checkbox is not checked")
	}
	act(Target{Locator: &Locator{Role: "checkbox", Name: "Fancy"}}, Action{Kind: ActCheck})
	act(Target{Locator: &Locator{Role: "checkbox", Name: "Fancy"}}, Action{Kind: ActUncheck})
	if query(css("#fancy"), Query{Kind: "checked"}).Has {
		t.Error("the aria checkbox is still checked")
	}
	act(css("#name"), Action{Kind: ActFocus})
	if !query(css("#name"), Query{Kind: "focused"}).Has {
		t.Error("#name is not focused")
	}
	act(css("#name"), Action{Kind: ActPress, Value: "Control+A"})
	act(css("#name"), Action{Kind: ActType, Value: "new", Delay: 20 * time.Millisecond})
	if v := query(css("#name"), Query{Kind: "value"}).Str; v != "new" {
		t.Errorf("after Control+A and typing: %q, want new (the chord selects the old text)", v)
	}
	act(css("#name"), Action{Kind: ActClear})
	if v := query(css("#name"), Query{Kind: "value"}).Str; v != "" {
		t.Errorf("after clear: %q", v)
	}
	act(css("#name"), Action{Kind: ActBlur})
	if query(css("#ro"), Query{Kind: "editable"}).Has {
		t.Error("#ro is editable")
	}
	act(Target{Locator: &Locator{Label: "Size"}}, Action{Kind: ActSelect, Value: "Large"})
	if v := query(css("#size"), Query{Kind: "value"}).Str; v != "l" {
		t.Errorf("select: %q", v)
	}
	act(Target{Locator: &Locator{Label: "Photo"}}, Action{Kind: ActUpload, Files: []duet.UploadFile{{Name: "a.txt", Type: "text/plain", Data: []byte("hello")}}})
	act(Target{Locator: &Locator{Label: "Attachments"}}, Action{Kind: ActUpload, Files: []duet.UploadFile{{Name: "b.txt", Data: []byte("1")}, {Name: "c.txt", Data: []byte("2")}}})
	act(css("#far"), Action{Kind: ActScroll})
	if y, err := s.Evaluate(ctx, "window.scrollY", nil, 0); err != nil || y.(float64) < 500 {
		t.Errorf("scrollY after scrollIntoView: %v, %v", y, err)
	}
	act(Target{Locator: &Locator{Text: "Card", Exact: true}}, Action{Kind: ActDrag, To: &Locator{Text: "Done", Exact: true}})
	deadline := time.Now().Add(10 * time.Second)
	want := "dblclick;contextmenu;focus;blur;file:a.txt:text/plain:hello;files:b.txt::1;files:c.txt::2;drop:card;"
	for {
		got := query(css("#log"), Query{Kind: "text"}).Str
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log: got %q, want %q", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Actions that do not fit their element, or over their bounds.
	// Seconds: the page must answer within it to say why (read-only).
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	wantCode(t, s.Act(short, css("#ro"), Action{Kind: ActFill, Value: "x"}), duet.CodeStepTimeout, "read-only")
	wantCode(t, s.Act(ctx, css("#dbl"), Action{Kind: ActCheck}), duet.CodeInvalidArgument, "checkbox")
	wantCode(t, s.Act(ctx, Target{Locator: &Locator{Label: "Photo"}}, Action{Kind: ActUpload, Files: []duet.UploadFile{{Name: "a", Data: []byte("1")}, {Name: "b", Data: []byte("2")}}}), duet.CodeInvalidArgument, "multiple")
	wantCode(t, s.Act(ctx, css("#file"), Action{Kind: ActUpload, Files: []duet.UploadFile{{Name: "big", Data: make([]byte, MaxUploadBytes+1)}}}), duet.CodeTooLarge)
	wantCode(t, s.Act(ctx, css("#name"), Action{Kind: ActType, Value: "x", Delay: 2 * time.Second}), duet.CodeInvalidArgument)
}

// TestFrames: a frame scope sends the element operations into an iframe —
// one of the page's origin, and one of another site, which Chromium runs
// in a process of its own — and the mouse lands where the element is.
func TestFrames(t *testing.T) {
	t.Parallel()
	s := newSession(t, sharedPool(t), "desktop")
	lab := newLab(t)
	open(t, s, lab, "/frames")
	ctx := testCtx(t, 60*time.Second)
	for _, tt := range []struct {
		frame *Locator
		host  string
	}{
		{&Locator{CSS: "#same"}, "127.0.0.1"},
		{&Locator{CSS: "#other"}, "localhost"},
	} {
		if err := s.SetFrame(ctx, []*Locator{tt.frame}); err != nil {
			t.Fatalf("SetFrame(%s): %v", tt.frame.String(), err)
		}
		if err := s.Act(ctx, Target{Locator: &Locator{Role: "button", Name: "Inside"}}, Action{Kind: ActClick}); err != nil {
			t.Fatalf("click in %s: %v", tt.frame.String(), err)
		}
		got, err := s.Query(ctx, Target{Locator: &Locator{CSS: "#res"}}, Query{Kind: "text"})
		if err != nil || got.Str != "inner clicked "+tt.host {
			t.Errorf("in %s: %q, %v", tt.frame.String(), got.Str, err)
		}
		v, err := s.Evaluate(ctx, "location.hostname", nil, 0)
		if err != nil || v != tt.host {
			t.Errorf("evaluate in %s: %v, %v", tt.frame.String(), v, err)
		}
	}
	if err := s.SetFrame(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Text(ctx, "h1"); err != nil || got != "Outer" {
		t.Errorf("back at the top: %q, %v", got, err)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second) // seconds: the page answers once in it
	defer cancel()
	wantCode(t, s.SetFrame(sctx, []*Locator{{CSS: "#nope"}}), duet.CodeElementNotFound)
	wantCode(t, s.SetFrame(ctx, []*Locator{{CSS: "h1"}}), duet.CodeInvalidArgument, "<h1>")
}

// TestTabsAndDialogs: a popup becomes the current tab after WaitForPopup,
// tabs switch by number and URL and close; dialogs are answered as told and
// recorded; history goes back and forward.
func TestTabsAndDialogs(t *testing.T) {
	t.Parallel()
	s := newSession(t, sharedPool(t), "desktop")
	lab := newLab(t)
	open(t, s, lab, "/popup")
	ctx := testCtx(t, 60*time.Second)
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := s.WaitForPopup(sctx)
	wantCode(t, err, duet.CodeStepTimeout, "no new tab")

	if err := s.Click(ctx, "#open"); err != nil {
		t.Fatal(err)
	}
	n, err := s.WaitForPopup(ctx)
	if err != nil || n != 2 {
		t.Fatalf("WaitForPopup: %d, %v", n, err)
	}
	if err := s.Click(ctx, "#in"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Text(ctx, "#res"); err != nil || got != "inner clicked 127.0.0.1" {
		t.Errorf("in the popup: %q, %v", got, err)
	}
	if _, err := s.SwitchTab(ctx, 1, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Click(ctx, "#win"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SwitchTab(ctx, 0, "/find"); err != nil || n != 3 {
		t.Fatalf("SwitchTab(/find): %d, %v", n, err)
	}
	if title, err := s.Title(ctx); err != nil || title != "Find" {
		t.Errorf("title of tab 3: %q, %v", title, err)
	}
	if err := s.CloseTab(ctx); err != nil {
		t.Fatal(err)
	}
	tabs, err := s.Tabs(ctx)
	if err != nil || len(tabs) != 2 || !tabs[0].Current {
		t.Fatalf("tabs after the close: %+v, %v", tabs, err)
	}
	wantCode(t, s.CloseTab(ctx), duet.CodeInvalidArgument, "first tab")
	// Seconds: the browser lists the tabs within it, which the error
	// names (else "not listed in time").
	sctx2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	_, err = s.SwitchTab(sctx2, 7, "")
	wantCode(t, err, duet.CodeNotFound, "no tab 7", "1. ")

	s.SetDialogs(false, nil)
	if err := s.Click(ctx, "#dlg"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Text(ctx, "#r"); err != nil || got != "confirm=false" {
		t.Errorf("dismissed confirm: %q, %v", got, err)
	}
	name := "Ada"
	s.SetDialogs(true, &name)
	if err := s.Click(ctx, "#ask"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Text(ctx, "#r"); err != nil || got != "prompt=Ada" {
		t.Errorf("prompt: %q, %v", got, err)
	}
	ds, _ := s.Dialogs()
	if len(ds) != 2 || ds[0].Message != "Delete the mug?" || ds[0].Accepted || ds[1].Type != "prompt" || !ds[1].Accepted {
		t.Errorf("dialogs: %+v", ds)
	}

	open(t, s, lab, "/find")
	for _, dir := range []string{"back", "forward", "reload"} {
		if err := s.History(ctx, dir); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	if title, err := s.Title(ctx); err != nil || title != "Find" {
		t.Errorf("after back, forward, reload: %q, %v", title, err)
	}
	wantCode(t, s.History(ctx, "forward"), duet.CodeInvalidArgument, "no page")
}

// TestEmulateAndEvaluate: the viewport, time zone, locale, position and
// colour scheme a case asks for are what the page sees; evaluate returns
// JSON values within its budgets.
func TestEmulateAndEvaluate(t *testing.T) {
	t.Parallel()
	s := newSession(t, sharedPool(t), "desktop")
	lab := newLab(t)
	open(t, s, lab, "/find")
	ctx := testCtx(t, 60*time.Second)
	err := s.Emulate(ctx, duet.Emulation{Width: 500, Height: 700, Timezone: "Asia/Tokyo", Locale: "de-DE", ColorScheme: "dark",
		Geolocation: &duet.GeoPoint{Latitude: 48.85, Longitude: 2.35}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Evaluate(ctx, `new Promise((ok) => navigator.geolocation.getCurrentPosition((p) => ok({
		w: innerWidth, h: innerHeight, tz: Intl.DateTimeFormat().resolvedOptions().timeZone, lang: navigator.language,
		num: (1234.5).toLocaleString(), dark: matchMedia('(prefers-color-scheme: dark)').matches, lat: p.coords.latitude, arg: args.x}), (e) => ok({err: e.message})))`,
		map[string]any{"x": []any{"y"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(v)
	for _, want := range []string{"w:500", "h:700", "tz:Asia/Tokyo", "lang:de-DE", "num:1.234,5", "dark:true", "lat:48.85", "arg:[y]"} {
		if !strings.Contains(got, want) {
			t.Errorf("the page sees %s; want %s", got, want)
		}
	}
	wantCode(t, s.Emulate(ctx, duet.Emulation{Timezone: "Mars/Olympus"}), duet.CodeInvalidArgument)

	_, err = s.Evaluate(ctx, `"x".repeat(2000)`, nil, 1000)
	wantCode(t, err, duet.CodeTooLarge, "2002")
	_, err = s.Evaluate(ctx, `(() => { throw new Error("boom") })()`, nil, 0)
	wantCode(t, err, duet.CodeBrowserError, "boom")
	_, err = s.Evaluate(ctx, `1)); window.big = 1; ((1`, nil, 0)
	wantCode(t, err, duet.CodeBrowserError)
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = s.Evaluate(lctx, `(() => { for (;;) {} })()`, nil, 0)
	wantCode(t, err, duet.CodeStepTimeout)
	if v, err := s.Evaluate(ctx, `document.title`, nil, 0); err != nil || v != "Find" {
		t.Errorf("after a loop was stopped, the page answers: %v, %v", v, err)
	}
}

// TestSummaryRoles: the page summary the agent reads lists the elements by
// their role and accessible name, as the accessibility tree has them, with
// the locator a step names them by, and says when one needs narrowing.
func TestSummaryRoles(t *testing.T) {
	t.Parallel()
	s := newSession(t, sharedPool(t), "desktop")
	lab := newLab(t)
	open(t, s, lab, "/find")
	got, err := s.Summary(testCtx(t, 30*time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"By role and name (name elements by these first)",
		`{role: heading, name: "Blue mug"} level=2`,
		`{role: button, name: "Add to cart"}  x2: add within: or nth:`,
		`{role: textbox, name: "Email address"}`,
		`{role: spinbutton, name: "Quantity"}`,
		`{role: img, name: "Company logo"}`,
		`{role: region, name: "Red mug"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Sign in later") {
		t.Errorf("the summary lists a hidden button:\n%s", got)
	}
}
