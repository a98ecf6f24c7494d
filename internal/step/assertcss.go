package step

import "github.com/duet-test/duet"

var assertCSSForm = compareForm(Key{Name: "property", Type: Template, Required: true, Doc: "the CSS property (color, display, ...), as computed"})

// AssertCSS is the assertCSS step.
var AssertCSS = register(compareAssertion("css", &assertCSSForm,
	"property", func(b *duet.BrowserStep) *string { return &b.Property },
	func(name string) string { return name },
	&Kind{
		Name:    "assertCSS",
		Order:   188,
		Summary: "Assert a computed CSS property of an element (colours read as rgb(...)); retries until it holds.",
		Example: "- assertCSS: {text: Sale, property: color, equals: \"rgb(200, 0, 0)\"}\n",
		Agent:   "`assertCSS: {text: \"Sale\", property: color, equals: \"rgb(200, 0, 0)\"}`",
	}))
