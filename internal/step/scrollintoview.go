package step

// ScrollIntoView is the scrollIntoView step.
var ScrollIntoView = register(elementAction("scroll", &Kind{
	Name:    "scrollIntoView",
	Order:   145,
	Summary: "Scroll the page until an element is in the middle of the view, and wait until it stops moving (a page that loads more as you scroll).",
	Example: "- scrollIntoView: {text: Load more}\n",
	Agent:   "`scrollIntoView: {text: \"Load more\"}`",
}))
