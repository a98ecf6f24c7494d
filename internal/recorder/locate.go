package recorder

import (
	"context"
	"fmt"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
)

// elementInfo is what the page's script says of an element (recorder.js
// info).
type elementInfo struct {
	Tag         string `json:"tag"`
	Label       string `json:"label"`
	Placeholder string `json:"placeholder"`
	Alt         string `json:"alt"`
	Title       string `json:"title"`
	TestID      string `json:"testId"`
	Text        string `json:"text"`
	CSS         string `json:"css"`
	Value       string `json:"value"`
	Lead        string `json:"lead"`
	Up          []int  `json:"up"`
}

// maxLocatorText bounds the texts a recorded locator names (a longer
// accessible name or label is not how a person names an element).
const maxLocatorText = 80

// candidates are the locators that could name the element, the most
// robust first, as the issue orders them: role and accessible name, then
// label, placeholder, text, test id, alt, title, and CSS last.
func candidates(ax browser.AXNode, in elementInfo, testIDAttr string) []*duet.Locator {
	var out []*duet.Locator
	short := func(s string) bool { return s != "" && len(s) <= maxLocatorText }
	if ax.Role != "" && short(ax.Name) {
		out = append(out, &duet.Locator{Role: ax.Role, Name: ax.Name}, &duet.Locator{Role: ax.Role, Name: ax.Name, Exact: true})
	}

	if short(in.Label) {
		out = append(out, &duet.Locator{Label: in.Label}, &duet.Locator{Label: in.Label, Exact: true})
	}
	if short(in.Placeholder) {
		out = append(out, &duet.Locator{Placeholder: in.Placeholder})
	}
	if short(in.Text) {
		out = append(out, &duet.Locator{Text: in.Text}, &duet.Locator{Text: in.Text, Exact: true})
	}
	if ax.Role != "" && ax.Name == "" && in.Lead != "" {
		// A row without a name, told by its first text.
		out = append(out, &duet.Locator{Role: ax.Role, HasText: in.Lead})
	}
	if in.TestID != "" {
		out = append(out, &duet.Locator{TestID: in.TestID, TestIDAttr: testIDAttr})
	}
	if short(in.Alt) {
		out = append(out, &duet.Locator{Alt: in.Alt})
	}
	if short(in.Title) {
		out = append(out, &duet.Locator{Title: in.Title})
	}
	return out
}

// locate returns the most robust locator that names the element id of
// the world contextID alone on the page as it is now: each candidate is
// counted by the browser package's own locator engine (the one a run
// uses), and the first that matches one element wins. When none does,
// the element's first candidate narrowed within the nearest ancestor
// that a candidate names alone (a button "Details" within its table
// row); else the CSS path the page's script built (from the nearest
// ancestor with a unique id, unique by construction), which duet lint
// flags for a person to improve.
func (l *Live) locate(ctx context.Context, contextID int64, id int) (*duet.Locator, elementInfo, error) {
	own, in, err := l.candidatesOf(ctx, contextID, id)
	if err != nil {
		return nil, in, err
	}
	for _, c := range own {
		n, err := l.count(ctx, c)
		if err != nil {
			return nil, in, err
		}
		if n == 1 {
			return c, in, nil
		}
	}
	if len(own) > 0 {
		for _, up := range in.Up {
			outer, _, err := l.candidatesOf(ctx, contextID, up)
			if err != nil {
				break
			}
			for _, o := range outer {
				if n, err := l.count(ctx, o); err != nil || n != 1 {
					continue
				}
				for _, c := range own {
					w := *c
					w.Within = o
					if n, err := l.count(ctx, &w); err == nil && n == 1 {
						return &w, in, nil
					}
				}
			}
		}
	}
	if in.CSS == "" {
		return nil, in, duet.Errorf(duet.CodeElementNotFound, "no locator names the element")
	}
	return &duet.Locator{CSS: in.CSS}, in, nil
}

// candidatesOf returns the candidate locators of the element id, and what
// the page's script says of it.
func (l *Live) candidatesOf(ctx context.Context, contextID int64, id int) ([]*duet.Locator, elementInfo, error) {
	var in *elementInfo
	if err := l.s.EvaluateIn(ctx, contextID, fmt.Sprintf("__duetRec.info(%d, %s)", id, lit(l.testIDAttr)), &in); err != nil {
		return nil, elementInfo{}, err
	}
	if in == nil {
		return nil, elementInfo{}, duet.Errorf(duet.CodeElementNotFound, "the element is no longer on the page")
	}
	ax, err := l.s.AccessibleNode(ctx, contextID, fmt.Sprintf("__duetRec.el(%d)", id))
	if err != nil {
		return nil, *in, err
	}
	return candidates(ax, *in, l.testIDAttr), *in, nil
}

// count is how many elements c matches on the page now.
func (l *Live) count(ctx context.Context, c *duet.Locator) (int, error) {
	a, err := l.s.Query(ctx, browser.Target{Locator: c}, browser.Query{Kind: "count"})
	if err != nil {
		return 0, err
	}
	return a.Count, nil
}
