package step

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

// Dialog is a JavaScript dialog a page opened (alert, confirm, prompt,
// beforeunload), and how it was answered.
type Dialog struct {
	Type     string
	Message  string
	Accepted bool
	At       time.Time
}

// Dialogs is a Page that answers the page's dialogs as it is told and
// records them. internal/browser's sessions are Dialogs.
type Dialogs interface {
	// SetDialogs says how the dialogs that open from now on are answered:
	// accepted (with promptText for a prompt when it is not nil) or
	// dismissed.
	SetDialogs(accept bool, promptText *string)
	// Dialogs returns the dialogs so far, the oldest first, and a channel
	// closed when another opens.
	Dialogs() ([]Dialog, <-chan struct{})
}

func dialogs(ctx context.Context, env Env, st *duet.Step) (Dialogs, error) {
	return pageAs[Dialogs](ctx, env, st, "cannot answer dialogs as told (its driver lacks Dialogs)")
}

// OnDialog is the onDialog step.
var OnDialog = register(&Kind{
	Name:    "onDialog",
	Section: Browser,
	Order:   158,
	Summary: "Say how the page's next dialogs (alert, confirm, prompt) are answered: accept (the default) or dismiss, with the text a prompt gets.",
	Form: shortFor("action", Enum("accept", "dismiss"), "accept or dismiss", "accept (OK) or dismiss (Cancel)",
		Key{Name: "promptText", Type: Template, Doc: "what a prompt answers (default: its default text)"}),
	Example: "- onDialog: dismiss\n- onDialog: {action: accept, promptText: Ada}\n",
	Doc:     "It holds until the next onDialog. A page's `beforeunload` question is always accepted, so that a case can leave the page.",
	Agent:   "`onDialog: dismiss` or `onDialog: {action: accept, promptText: \"Ada\"}` — before the click that opens the dialog; then `assertDialog: {contains: \"...\"}`",
	Compile: browserStep(false, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		if bd.isMap {
			c.AllowKeys(n, "action", "promptText")
		}
		b := bd.b
		b.Dialog = bd.text("action", false)
		b.Value = bd.field("promptText", false)
		if b.Dialog != "" && b.Dialog != "accept" && b.Dialog != "dismiss" {
			c.Errf(n, "onDialog: accept or dismiss, got %q", b.Dialog)
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		d, err := dialogs(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		var prompt *string
		if st.Browser.Value != "" {
			v, err := renderOpt(env, st.Browser.Value)
			if err != nil {
				return "", nil, err
			}
			prompt = &v
		}
		d.SetDialogs(st.Browser.Dialog != "dismiss", prompt)
		return "", nil, nil
	},
})

var assertDialogForm = pageCompareForm("a part of the dialog's message (as contains)",
	Key{Name: "type", Type: Enum("alert", "confirm", "prompt", "beforeunload"), Doc: "the dialog's type (default any)"})

// AssertDialog is the assertDialog step.
var AssertDialog = register(&Kind{
	Name:      "assertDialog",
	Section:   Browser,
	Order:     194,
	Summary:   "Assert the message of the last dialog the page opened (of a type, when given); waits for one to open.",
	Form:      assertDialogForm,
	Assertion: true,
	Example:   "- assertDialog: Delete the mug?\n- assertDialog: {type: confirm, matches: \"^Delete\"}\n",
	Agent:     "`assertDialog: \"Delete the mug?\"` (contains) or `assertDialog: {type: confirm, equals: \"...\"}`",
	Compile: pageStep(false, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		if !bd.isMap {
			bd.b.Contains = bd.short
			c.Template(n, "assertDialog", bd.short)
			return
		}
		c.AllowKeys(n, assertDialogForm.KeyNames()...)
		bd.b.Dialog = c.String(n, "type", false)
		switch bd.b.Dialog {
		case "", "alert", "confirm", "prompt", "beforeunload":
		default:
			c.Errf(n.Get("type"), "type must be alert, confirm, prompt or beforeunload, got %q", bd.b.Dialog)
		}
		bd.compileCompareNot()
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		d, err := dialogs(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		actx, cancel := assertContext(ctx, st)
		defer cancel()
		what := "the last dialog's message"
		if st.Browser.Dialog != "" {
			what = "the last " + st.Browser.Dialog + "'s message"
		}
		var last error
		for {
			list, seen := d.Dialogs()
			var msg *string
			for i := len(list) - 1; i >= 0; i-- {
				if st.Browser.Dialog == "" || list[i].Type == st.Browser.Dialog {
					msg = &list[i].Message
					break
				}
			}
			if msg != nil {
				if last = compareNot(env, what, *msg, st.Browser); last == nil {
					return "", *msg, nil
				}
				if duet.ErrorCode(last) != duet.CodeAssertionFailed {
					return "", nil, last
				}
			}
			select {
			case <-seen:
			case <-actx.Done():
				if last != nil {
					return "", nil, last
				}
				return "", nil, duet.Errorf(duet.CodeAssertionFailed, "no dialog opened (%s)", firstNonEmpty(st.Browser.Dialog, "any type"))
			}
		}
	},
})

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
