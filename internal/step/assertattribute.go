package step

import "github.com/duet-test/duet"

var assertAttributeForm = compareForm(Key{Name: "attr", Type: Template, Required: true, Doc: "the attribute's name"})

// AssertAttribute is the assertAttribute step.
var AssertAttribute = register(compareAssertion("attr", &assertAttributeForm,
	"attr", func(b *duet.BrowserStep) *string { return &b.Attr },
	func(name string) string { return "attribute " + name },
	&Kind{
		Name:    "assertAttribute",
		Order:   174,
		Summary: "Assert an attribute of an element (aria-expanded, href, class...); retries until it holds. An element without the attribute fails it (and passes with not).",
		Example: "- assertAttribute: {role: button, name: Menu, attr: aria-expanded, equals: \"true\"}\n",
		Agent:   "`assertAttribute: {role: link, name: \"Help\", attr: href, contains: \"/help\"}`",
	}))
