package step

import (
	"context"
	"net/url"
	"strings"

	"github.com/duet-test/duet"
)

var extractForm = Form{
	Keys: append(append([]Key{
		{Name: "from", Type: Enum("text", "value", "attr", "url", "url.query", "url.segment", "title"), Required: true, Doc: "what to read"},
	}, locatorKeys...), // the element (text, value, attr)
		Key{Name: "attr", Type: Template, Doc: "the attribute's name (attr)"},
		Key{Name: "param", Type: Template, Doc: "the query parameter's name (url.query)"},
		Key{Name: "segment", Type: Int, Doc: "the path segment: 0 the first, -1 the last (url.segment)"},
		Key{Name: "as", Type: Ident, Doc: "the variable to save to"},
		Key{Name: "saveAs", Type: Ident, Doc: "the same as as"},
	),
	AtLeastOne: []string{"as", "saveAs"},
	When: []When{
		{Key: "from", In: []string{"attr"}, Require: []string{"attr"}},
		{Key: "from", In: []string{"url.query"}, Require: []string{"param"}},
		{Key: "from", In: []string{"url.segment"}, Require: []string{"segment"}},
	},
}

// Extract is the extract step.
var Extract = register(&Kind{
	Name:    duet.StepExtract,
	Section: Browser,
	Order:   200,
	Summary: "Save a text, a value, an attribute, the title or a part of the URL of the page to a variable.",
	Form:    extractForm,
	Example: "- extract: {from: text, selector: \"#status\", as: shown}\n- extract: {from: value, label: Quantity, as: qty}\n- extract: {from: url.query, param: orderId, as: orderId}\n- extract: {from: url.segment, segment: -1, as: orderNo}\n",
	Agent: "`extract: {from: text | value | attr | url | url.query | url.segment | title, <locator>, attr: ..., param: ..., segment: 0, as: varName}`\n" +
		"  (text/value/attr need a locator — role/label/selector...; attr needs attr; url.query needs param; url.segment needs segment, -1 is the last)",
	Compile: pageStep(false, compileExtract),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, b, _, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		var v string
		switch b.From {
		case "text", "value", "attr":
			el, t, err := elements(ctx, env, st)
			if err != nil {
				return "", nil, err
			}
			a, err := el.Query(ctx, t, Query{Kind: b.From, Name: b.Attr})
			if err != nil {
				return "", nil, err
			}
			v = a.Str
			if b.From == "text" {
				v = strings.TrimSpace(v)
			}
			if b.From == "attr" && !a.Has {
				return "", nil, duet.Errorf(duet.CodeElementNotFound, "%s has no attribute %s", t, b.Attr)
			}
		case "title":
			v, err = p.Title(ctx)
		case "url", "url.query", "url.segment":
			v, err = p.URL(ctx)
			if err == nil && b.From != "url" {
				v, err = URLPart(v, b.Param, b.Segment)
			}
		default:
			err = duet.Errorf(duet.CodeInvalidArgument, "unknown extract source %q", b.From)
		}
		if err != nil {
			return "", nil, err
		}
		return b.SaveAs, v, nil
	},
})

func compileExtract(c *Compiler, st *duet.Step, n *Node, bd *body) {
	if !bd.isMap {
		c.Errf(n, "extract needs {from, as, ...}")
		return
	}
	b := bd.b
	c.AllowKeys(n, extractForm.KeyNames()...)
	b.From = c.String(n, "from", true)
	switch b.From {
	case "text", "value":
		bd.target(true)
	case "attr":
		bd.target(true)
		b.Attr = bd.field("attr", true)
	case "url.query":
		b.Param = bd.field("param", true)
	case "url.segment":
		seg, ok := n.Get("segment").Int()
		if !ok {
			c.Errf(n, "extract from url.segment needs segment: N (0 first, -1 last)")
		}
		i := int(seg)
		b.Segment = &i
	case "url", "title":
	case "":
	default:
		c.Errf(n.Get("from"), "extract from must be text, value, attr, url, url.query, url.segment or title; got %q", b.From)
	}
	b.SaveAs = c.saveAsKey(n, "extract needs as: (the variable to save to)")
}

// URLPart returns a query parameter (param != "") or a path segment of raw
// (0 the first, -1 the last; nil: the first). Returns BINDING_FAILED.
func URLPart(raw, param string, segment *int) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", duet.Errorf(duet.CodeBindingFailed, "the page URL %q does not parse", raw)
	}
	if param != "" {
		q := u.Query()
		if !q.Has(param) {
			return "", duet.Errorf(duet.CodeBindingFailed, "the page URL %s has no query parameter %q", raw, param)
		}
		return q.Get(param), nil
	}
	var segs []string
	for _, s := range strings.Split(u.Path, "/") {
		if s != "" {
			segs = append(segs, s)
		}
	}
	i := 0
	if segment != nil {
		i = *segment
	}
	if i < 0 {
		i += len(segs)
	}
	if i < 0 || i >= len(segs) {
		return "", duet.Errorf(duet.CodeBindingFailed, "the page URL %s has no path segment %d", raw, i)
	}
	seg, _ := url.PathUnescape(segs[i])
	return seg, nil
}
