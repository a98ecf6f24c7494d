package step_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/duet-test/duet/internal/compiler"
)

// TestLocatorCompile: the new keys compile to their steps, and bad input
// is refused with its line and column.
func TestLocatorCompile(t *testing.T) {
	t.Parallel()
	head := "task: {name: t, baseURL: http://h, testIdAttribute: data-qa}\ncases:\n  - title: c\n    steps:\n      - open: /\n"
	files := fstest.MapFS{"r.txt": {Data: []byte("receipt")}, "big.bin": {Data: make([]byte, 5<<20)}, "dir/x": {Data: []byte("x")}}
	for src, want := range map[string]string{
		"      - click: {role: buton}\n":                                  `t.yaml:6:23: "buton" is not an ARIA role such as button`,
		"      - click: {role: button, text: Buy}\n":                      "t.yaml:6:37: a locator has one of selector, role, text, label, placeholder, alt, title, testId, xpath; this one has role and text",
		"      - click: {name: Buy}\n":                                    "t.yaml:6:23: name goes with role",
		"      - click: {text: \"/[/\"}\n":                                "t.yaml:6:23: text: invalid regular expression /[/",
		"      - click: {text: Buy, nth: first}\n":                        "t.yaml:6:33: nth must be a whole number",
		"      - click: {text: Buy, exact: yes please}\n":                 "t.yaml:6:35: exact must be true or false",
		"      - click: {within: [a]}\n":                                  "t.yaml:6:25: within must be a CSS selector or a mapping of locator keys",
		"      - click: {within: {rolle: x}}\n":                           `t.yaml:6:26: unknown key "rolle"`,
		"      - click: {text: Buy, button: left-ish}\n":                  `t.yaml:6:36: button must be left, right or middle`,
		"      - click: {text: Buy, modifiers: [Hyper]}\n":                `t.yaml:6:40: a modifier is Shift, Control, Alt or Meta`,
		"      - click: {}\n":                                             "t.yaml:6:16: click needs a locator",
		"      - fill: {label: Email}\n":                                  "t.yaml:6:15: missing key value",
		"      - type: {label: Q, value: x, delay: 5s}\n":                 "t.yaml:6:43: timeout must be between 1ms and 1s",
		"      - dragTo: {text: a}\n":                                     "t.yaml:6:17: missing key to",
		"      - upload: {label: R, files: [missing.txt]}\n":              "t.yaml:6:36: files: cannot read missing.txt",
		"      - upload: {label: R, files: [../etc/passwd]}\n":            `t.yaml:6:36: files: "../etc/passwd" must be a path inside the suite's folder`,
		"      - upload: {label: R, files: big.bin}\n":                    "t.yaml:6:35: files: big.bin has 5242880 bytes, more than the 4194304 of an upload",
		"      - upload: {label: R, files: dir}\n":                        "t.yaml:6:35: files: dir is not a file",
		"      - assertCount: {role: row}\n":                              "t.yaml:6:22: missing key count",
		"      - assertCount: {role: row, count: -1}\n":                   "t.yaml:6:41: count must be a whole number",
		"      - assertText: {role: status, equals: a, not: maybe}\n":     "t.yaml:6:52: not must be true or false",
		"      - click: {text: Buy}\n        soft: true\n":                "t.yaml:7:9: soft goes with an assertion (click is not one)",
		"      - assertTitle: x\n        soft: sure\n":                    "t.yaml:7:15: soft must be true or false",
		"      - onDialog: maybe\n":                                       `t.yaml:6:19: onDialog: accept or dismiss, got "maybe"`,
		"      - assertDialog: {type: toast, contains: x}\n":              `t.yaml:6:30: type must be alert, confirm, prompt or beforeunload`,
		"      - switchTo: 0\n":                                           "t.yaml:6:19: a tab is a number from 1",
		"      - switchTo: {tab: 2, urlContains: x}\n":                    "t.yaml:6:19: switchTo needs exactly one of tab, urlContains",
		"      - frame: [\"#a\", {role: nope}]\n":                         `t.yaml:6:30: "nope" is not an ARIA role`,
		"      - emulate: {viewport: {width: 0, height: 10}}\n":           "t.yaml:6:37: width must be a whole number from 1 to 10000",
		"      - emulate: {geolocation: {latitude: 91, longitude: 0}}\n":  "t.yaml:6:43: latitude must be between -90 and 90",
		"      - emulate: {timezone: \"Europe/Ber lin\"}\n":               "t.yaml:6:29: timezone \"Europe/Ber lin\" is not an IANA time zone",
		"      - emulate: {locale: \"not a tag\"}\n":                      "t.yaml:6:27: locale \"not a tag\" is not a language tag",
		"      - emulate: {}\n":                                           "t.yaml:6:18: emulate needs viewport",
		"      - evaluate: {expression: \"1\", args: {x: \"${nope}\"}}\n": "t.yaml:6:47: args.x: in ${nope}: unknown name nope",
		"      - waitForPopup: now\n":                                     "t.yaml:6:23: waitForPopup takes nothing",
		"      - closeTab: please\n":                                      "t.yaml:6:19: closeTab takes nothing",
		"      - wait: 2m\n":                                              "t.yaml:6:15: timeout must be between 1ms and 1m0s",
		"      - waitFor: {role: dialog, selector: '#x'}\n":               "t.yaml:6:25: a locator has one of",
		"      - extract: {from: text, as: x}\n":                          "t.yaml:6:18: extract needs a locator",
		"      - click: \"div[\"\n":                                       `t.yaml:6:16: the CSS selector "div[" does not parse`,
		"      - click: {selector: \"a,,b\"}\n":                           `t.yaml:6:27: the CSS selector "a,,b" does not parse`,
		"      - waitFor: \"#a >> b\"\n":                                  `t.yaml:6:18: the CSS selector "#a >> b" does not parse`,
		"      - click: {xpath: \"//div[\"}\n":                            `t.yaml:6:24: the XPath "//div[" does not parse`,
		"      - click: {role: row, within: \"tr[\"}\n":                   `t.yaml:6:36: the CSS selector "tr[" does not parse`,
	} {
		_, err := compiler.CompileSuite(t.Context(), []byte(head+src), "t.yaml", compiler.Options{Files: files})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v,\nwant %q", src, err, want)
		}
	}
	if _, err := compiler.CompileSuite(t.Context(), []byte(head+"      - upload: {label: R, files: r.txt}\n"), "t.yaml", compiler.Options{}); err == nil ||
		!strings.Contains(err.Error(), "t.yaml:6:35: files: \"r.txt\" is a file of the suite's folder, which this suite has not") {
		t.Errorf("an upload of a suite without a folder: %v", err)
	}

	s, err := compiler.CompileSuite(t.Context(), []byte(head+`      - click: {role: button, name: "/^Pay/i", within: {testId: "row-${run.id}"}, nth: -1}
      - click: "#legacy"
      - upload: {label: Receipt, files: [r.txt, {name: note.txt, content: hi}]}
      - assertText: {selector: "#s", equals: ok, not: true}
        soft: true
      - frame: ["#outer", {title: Card}]
      - click: "li:has(> a):focus-visible"
      - click: {selector: "div:is(.a, .b) > p:nth-child(2n+1)"}
      - click: {xpath: "//li[normalize-space()='Sign in'][last()]"}
      - click: "#row-${run.id} [data-x"
`), "t.yaml", compiler.Options{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	steps := s.Cases[0].Steps
	l := steps[1].Browser.Locator
	if l == nil || l.Role != "button" || l.Name != "/^Pay/i" || l.Within == nil || l.Within.TestID != "row-${run.id}" || l.Within.TestIDAttr != "data-qa" || l.Nth == nil || *l.Nth != -1 {
		t.Errorf("the locator: %+v", l)
	}
	if steps[1].Name != `click role=button[name="/^Pay/i"] nth=-1 within data-qa="row-${run.id}"` {
		t.Errorf("the name: %q", steps[1].Name)
	}
	if b := steps[2].Browser; b.Selector != "#legacy" || b.Locator != nil {
		t.Errorf("a bare CSS selector stays as it was: %+v", b)
	}
	if f := steps[3].Browser.Files; len(f) != 2 || string(f[0].Data) != "receipt" || f[0].Type != "text/plain; charset=utf-8" || f[1].Name != "note.txt" || string(f[1].Data) != "hi" {
		t.Errorf("the files: %+v", f)
	}
	if st := steps[4]; !st.Soft || !st.Browser.Not {
		t.Errorf("soft and not: %+v", st)
	}
	if fr := steps[5].Browser.Frame; len(fr) != 2 || fr[0].CSS != "#outer" || fr[1].Title != "Card" {
		t.Errorf("the frames: %+v", fr)
	}
}
