package engine_test

import (
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/trace"
)

// awOptions sets what BenchmarkAutoWait's engines need on this tree: no
// trace, as on the tree before locators (bench/autowait.sh gives that tree
// an awOptions that does nothing).
func awOptions(o *engine.Options) { o.Trace = trace.Off }
