package step

import (
	"context"
	"regexp"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
)

// Emulator is a Page whose viewport, position, locale, time zone and
// colour scheme a case can set. internal/browser's sessions are Emulators
// (a real phone keeps its own viewport).
type Emulator interface {
	Emulate(ctx context.Context, e duet.Emulation) error
}

var (
	localeRe   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$`) })
	timezoneRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$`) })
)

var sizeType = TypeOf("{width, height}", func(bool) *jsonschema.Schema {
	dim := &jsonschema.Schema{Type: "integer", Minimum: ptr(1.0), Maximum: ptr(10000.0)}
	return &jsonschema.Schema{Type: "object", Required: []string{"width", "height"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		Properties: map[string]*jsonschema.Schema{"width": dim, "height": dim}}
})

var geoType = TypeOf("{latitude, longitude, accuracy}", func(bool) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"latitude", "longitude"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		Properties: map[string]*jsonschema.Schema{
			"latitude":  {Type: "number", Minimum: ptr(-90.0), Maximum: ptr(90.0)},
			"longitude": {Type: "number", Minimum: ptr(-180.0), Maximum: ptr(180.0)},
			"accuracy":  {Type: "number", Minimum: ptr(0.0), Description: "metres (default 10)"},
		}}
})

// Emulate is the emulate step.
var Emulate = register(&Kind{
	Name:    "emulate",
	Section: Browser,
	Order:   104,
	Summary: "Set what the case's page sees of the machine: the viewport, the position (geolocation, permission granted), the locale, the time zone, the colour scheme.",
	Form: Form{
		Keys: []Key{
			{Name: "viewport", Type: sizeType, Doc: "the viewport in CSS pixels"},
			{Name: "geolocation", Type: geoType, Doc: "where navigator.geolocation says the device is"},
			{Name: "locale", Type: Text, Doc: "a BCP 47 language tag: navigator.language, Accept-Language, number and date formats (de-DE, ja-JP)"},
			{Name: "timezone", Type: Text, Doc: "an IANA time zone (Europe/Berlin, Asia/Tokyo)"},
			{Name: "colorScheme", Type: Enum("light", "dark"), Doc: "prefers-color-scheme"},
		},
		AtLeastOne: []string{"viewport", "geolocation", "locale", "timezone", "colorScheme"},
	},
	Example: "- emulate: {viewport: {width: 390, height: 844}, locale: de-DE, timezone: Europe/Berlin}\n- emulate: {geolocation: {latitude: 52.52, longitude: 13.40}, colorScheme: dark}\n",
	Doc:     "Put it first in a case (before `open`) so that the page loads with it; it holds for the case's page and the tabs it opens, and every case starts with none of it.",
	Agent:   "`emulate: {viewport: {width: 390, height: 844}, locale: de-DE, timezone: Europe/Berlin, geolocation: {latitude: 52.52, longitude: 13.4}, colorScheme: dark}` — first in a case",
	Compile: browserStep(false, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		if !bd.isMap {
			c.Errf(n, "emulate needs a mapping: {viewport, geolocation, locale, timezone, colorScheme}")
			return
		}
		c.AllowKeys(n, "viewport", "geolocation", "locale", "timezone", "colorScheme")
		e := &duet.Emulation{}
		bd.b.Emulate = e
		if vn := n.Get("viewport"); vn != nil {
			c.AllowKeys(vn, "width", "height")
			e.Width, e.Height = c.intIn(vn, "width", 1, 10000), c.intIn(vn, "height", 1, 10000)
		}
		if gn := n.Get("geolocation"); gn != nil {
			c.AllowKeys(gn, "latitude", "longitude", "accuracy")
			e.Geolocation = &duet.GeoPoint{Latitude: c.numIn(gn, "latitude", -90, 90, true), Longitude: c.numIn(gn, "longitude", -180, 180, true), Accuracy: c.numIn(gn, "accuracy", 0, 1e6, false)}
		}
		if e.Locale = c.String(n, "locale", false); e.Locale != "" && !localeRe().MatchString(e.Locale) {
			c.Errf(n.Get("locale"), "locale %q is not a language tag such as de-DE", e.Locale)
		}
		if e.Timezone = c.String(n, "timezone", false); e.Timezone != "" && !timezoneRe().MatchString(e.Timezone) {
			c.Errf(n.Get("timezone"), "timezone %q is not an IANA time zone such as Europe/Berlin", e.Timezone)
		}
		switch e.ColorScheme = c.String(n, "colorScheme", false); e.ColorScheme {
		case "", "light", "dark":
		default:
			c.Errf(n.Get("colorScheme"), "colorScheme must be light or dark, got %q", e.ColorScheme)
		}
		if *e == (duet.Emulation{}) && e.Geolocation == nil {
			c.Errf(n, "emulate needs viewport, geolocation, locale, timezone or colorScheme")
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		em, err := pageAs[Emulator](ctx, env, st, "cannot emulate (its driver lacks Emulator)")
		if err != nil {
			return "", nil, err
		}
		return "", nil, em.Emulate(ctx, *st.Browser.Emulate)
	},
})

// intIn reads the whole number key of the mapping n, in [lo, hi].
func (c *Compiler) intIn(n *Node, key string, lo, hi int64) int {
	v := n.Get(key)
	if v == nil {
		c.Errf(n, "missing key %s", key)
		return 0
	}
	i, ok := v.Int()
	if !ok || i < lo || i > hi {
		c.Errf(v, "%s must be a whole number from %d to %d", key, lo, hi)
		return 0
	}
	return int(i)
}

// numIn reads the number key of the mapping n, in [lo, hi].
func (c *Compiler) numIn(n *Node, key string, lo, hi float64, required bool) float64 {
	v := n.Get(key)
	if v == nil {
		if required {
			c.Errf(n, "missing key %s", key)
		}
		return 0
	}
	f, ok := v.Float()
	if !ok {
		c.Errf(v, "%s must be a number", key)
		return 0
	}
	if f < lo || f > hi {
		c.Errf(v, "%s must be between %g and %g", key, lo, hi)
	}
	return f
}
