package step

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

var assertCountForm = Form{
	Keys: append([]Key{{Name: "count", Type: Int, Required: true, Doc: "how many elements the locator must match (0 or more)"}},
		append(locatorKeys[:len(locatorKeys):len(locatorKeys)], notKey)...),
}

// AssertCount is the assertCount step.
var AssertCount = register(&Kind{
	Name:      "assertCount",
	Section:   Browser,
	Order:     176,
	Summary:   "Assert how many elements a locator matches (the rows of a table, the items of a cart); retries until it holds.",
	Form:      assertCountForm,
	Assertion: true,
	Example:   "- assertCount: {role: row, within: {role: table, name: Orders}, count: 4}\n",
	Agent:     "`assertCount: {role: row, within: {role: table}, count: 4}`",
	Compile: elementStep(&assertCountForm, func(c *Compiler, n *Node, bd *body) {
		cn := n.Get("count")
		i, ok := cn.Int()
		switch {
		case cn == nil:
			c.Errf(n, "missing key count")
		case !ok || i < 0 || i > duet.MaxNth:
			c.Errf(cn, "count must be a whole number from 0 to %d", duet.MaxNth)
		default:
			v := int(i)
			bd.b.Count = &v
		}
		bd.compileNot()
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		el, t, err := elements(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		t.First = false // a count counts every match
		want, not := *st.Browser.Count, st.Browser.Not
		var got int
		err = retryPage(ctx, st, func(ctx context.Context, wait time.Duration) error {
			a, err := el.Query(ctx, t, Query{Kind: "count", Wait: wait})
			if err != nil {
				return err
			}
			got = a.Count
			switch {
			case !not && got != want:
				return duet.Errorf(duet.CodeAssertionFailed, "%s matches %d elements, want %d", t, got, want)
			case not && got == want:
				return duet.Errorf(duet.CodeAssertionFailed, "%s matches %d elements; expected another count", t, got)
			}
			return nil
		})
		if err != nil {
			return "", nil, err
		}
		return "", float64(got), nil
	},
})
