package compiler

import (
	"context"
	"strings"
	"testing"
)

// segmentSuite binds and extracts path segments counted from the start.
const segmentSuite = `
task: {name: t, baseURL: "http://h"}
cases:
  - title: segments
    steps:
      - open: /orders/A1001/items/7
      - extract: {from: url.segment, segment: 0, as: section}
      - extract: {from: url.segment, segment: 3, as: item}
      - mcpCall: {serverKey: mcp_a_0123abcd, tool: t, input: {id: {from: page.url, segment: 1}}}
`

// TestSegmentsFromTheStart: a path segment counted from the start (0, 1,
// ...) compiles, as the docs say; YAML reads those numbers as unsigned, and
// only the negative ones (from the end) used to be accepted ("extract from
// url.segment needs segment: N", "segment must be an integer").
func TestSegmentsFromTheStart(t *testing.T) {
	t.Parallel()
	s, err := CompileSuite(context.Background(), []byte(segmentSuite), "s.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	steps := s.Cases[0].Steps
	if got := *steps[1].Browser.Segment; got != 0 {
		t.Errorf("segment: got %d, want 0", got)
	}
	if got := *steps[2].Browser.Segment; got != 3 {
		t.Errorf("segment: got %d, want 3", got)
	}
	if got := *steps[3].MCP.InputBindings["id"].Segment; got != 1 {
		t.Errorf("binding segment: got %d, want 1", got)
	}
	big := strings.Replace(segmentSuite, "segment: 3", "segment: 18446744073709551615", 1)
	if _, err := CompileSuite(context.Background(), []byte(big), "s.yaml", Options{}); err == nil || !strings.Contains(err.Error(), "s.yaml:8:18: extract from url.segment needs segment") {
		t.Errorf("a segment beyond int64: got %v, want refused", err)
	}
}

// TestMalformedValuesAreRefused: values of the wrong type that the
// compiler used to drop or misread in silence (a step name that is a
// mapping, waitFor's visible: yes read as false, a boolean taken for a
// variable name) are refused at their line and column, as everywhere else.
func TestMalformedValuesAreRefused(t *testing.T) {
	t.Parallel()
	head := "task:\n  name: t\n  baseURL: http://h\ncases:\n  - title: c\n    steps:\n      - open: /\n"
	for src, want := range map[string]string{
		head + "      - click: x\n        name: {a: 1}\n":            "9:15: name must be a string, got a mapping",
		head + "      - waitFor: {selector: x, visible: yes}\n":      "8:41: visible must be true or false",
		head + "      - http: {url: /x, saveAs: true}\n":             `8:33: saveAs must be a variable name (letters, digits, _), got "true"`,
		head + "      - extract: {from: title, as: false}\n":         `8:36: saveAs must be a variable name (letters, digits, _), got "false"`,
		head + "      - waitFor: {selector: x, visible: true}\n":     "",
		head + "      - click: x\n        name: 7\n":                 "",
		head + "      - http: {url: /x, saveAs: true_value}\n":       "",
		head + "      - click: x\n        name:\n      - click: y\n": "",
	} {
		_, err := CompileSuite(context.Background(), []byte(src), "s.yaml", Options{})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: got %v, want it to compile", src[len(head):], err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), "s.yaml:"+want)):
			t.Errorf("%s: got %v, want %q", src[len(head):], err, want)
		}
	}
}
