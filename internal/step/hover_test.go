package step_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
)

// menuPage has a menu that opens when the mouse enters its button, under
// a banner that covers a second button.
const menuPage = `<!doctype html><html><head><title>Menu</title><style>
#items { display: none } #covered { position: absolute; top: 200px; left: 10px }
#banner { position: absolute; top: 190px; left: 0; width: 400px; height: 60px; background: #eee }
</style></head><body>
<nav><button id="menu">Account</button><ul id="items"><li><a id="logout" href="/bye">Sign out</a></li></ul></nav>
<button id="covered">Hidden under the banner</button><div id="banner">banner</div>
<script>
document.getElementById('menu').addEventListener('mouseenter', () => { document.getElementById('items').style.display = 'block'; });
</script></body></html>`

// TestHover: a hover step opens a menu that opens on hover, in Chromium;
// an element that is missing or covered fails the step with the driver's
// codes.
func TestHover(t *testing.T) {
	t.Parallel()
	base := site(t, map[string]string{"/": menuPage, "/bye": "<!doctype html><title>Bye</title><p id=bye>bye</p>"})
	x := runSteps(t, base, `      - open: /
      - assertVisible: {selector: "#logout", visible: false}
      - hover: "#menu"
      - assertVisible: "#logout"
      - click: "#logout"
      - assertText: {selector: "#bye", equals: bye}
      - hover: {selector: "#logout-${run.id}"}
        timeout: 1s
`)
	if x.Status != duet.StatusFailed || len(x.Results) != 7 {
		t.Fatalf("got %s", describe(x))
	}
	for _, r := range x.Results[:6] {
		if r.Status != duet.StatusPassed {
			t.Fatalf("step %d (%s): got %s", r.Index, r.Kind, describe(x))
		}
	}
	if r := x.Results[6]; r.ErrorCode != duet.CodeElementNotFound || !strings.Contains(r.ErrorMessage, "hover: no element matches") || r.Name != "hover #logout-${run.id}" {
		t.Errorf("hover of a missing element: got %s %q (%q), want ELEMENT_NOT_FOUND", r.ErrorCode, r.ErrorMessage, r.Name)
	}

	x = runSteps(t, base, `      - open: /
      - hover: "#covered"
        timeout: 1s
`)
	if r := x.Results[1]; r.ErrorCode != duet.CodeStepTimeout || !strings.Contains(r.ErrorMessage, "is covered by") {
		t.Errorf("hover of a covered element: got %s", describe(x))
	}
}

// TestHoverCompile: hover compiles like the other element steps, with
// line:col errors.
func TestHoverCompile(t *testing.T) {
	t.Parallel()
	head := "task: {name: t, baseURL: http://h}\ncases:\n  - title: c\n    steps:\n"
	for src, want := range map[string]string{
		"      - hover: '#x'\n": "t.yaml:5:16: hover needs a page: add an open step before it",
		"      - open: /\n      - hover: {selector: '#x', force: 1}\n": `t.yaml:6:33: unknown key "force" (allowed: selector, role, name, text, label, placeholder, alt, title, testId, xpath, exact, within, has, hasText, nth)`,
		"      - open: /\n      - hover: {}\n":                         "t.yaml:6:16: hover needs a locator: one of selector, role, text, label",
		"      - open: /\n      - hover: [a]\n":                        "t.yaml:6:16: hover must be a string or a mapping",
		"      - open: /\n      - hover: '${nope}'\n":                  "t.yaml:6:16: hover: in ${nope}: unknown name nope",
	} {
		_, err := compiler.CompileSuite(t.Context(), []byte(head+src), "t.yaml", compiler.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
	s, err := compiler.CompileSuite(t.Context(), []byte(head+"      - open: /\n      - hover: {selector: '#menu'}\n"), "t.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Cases[0].Steps[1]; st.Kind != "hover" || st.Browser.Selector != "#menu" || st.Name != "hover #menu" {
		t.Errorf("got %+v", st)
	}
}
