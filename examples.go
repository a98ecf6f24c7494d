package duet

import "embed"

// Examples holds the example suites of examples/, so that `duet demo` works
// from any directory.
//
//go:embed examples/*.yaml
var Examples embed.FS
