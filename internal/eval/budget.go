package eval

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm/runtime"
)

// The budget of one evaluation: one expression, or one template or JSON value
// with all its ${...} parts. Sizes are measured as the value's JSON text,
// roughly (numbers count 8 bytes).
const (
	// MaxValueBytes is the largest string, list or map an evaluation may
	// build. Functions that build values from their arguments (repeat,
	// replace, join, split, toJSON, string, concat, +, a..b) check the size
	// of what they are about to build before they allocate it.
	MaxValueBytes = 16 << 20
	// MaxTotalBytes bounds everything one evaluation builds, together.
	MaxTotalBytes = 64 << 20
	// MaxSteps bounds the function calls and loop iterations (map, filter,
	// all, reduce, ...) of one evaluation.
	MaxSteps = 1_000_000
	// MaxDuration bounds the running time of one evaluation.
	MaxDuration = time.Second
	// MaxDepth bounds how deeply a value built by an evaluation may nest.
	MaxDepth = 10_000
)

// Size returns the size of v as JSON, as the budgets measure it (numbers
// count 8 bytes), or a number above limit as soon as it passes limit: its
// cost is bounded by limit however large v is.
func Size(v any, limit int) int {
	s := sizer{limit: limit, maxDepth: MaxDepth}
	s.add(v, 0)
	if s.deep {
		return limit + 1
	}
	return s.n
}

// ErrBudget is wrapped by every error of an evaluation that went over its
// budget (see MaxValueBytes and the other limits).
var ErrBudget = errors.New("expression budget exceeded")

type budgetError struct{ msg string }

func (e *budgetError) Error() string        { return e.msg }
func (e *budgetError) Is(target error) bool { return target == ErrBudget }

func overBudget(format string, args ...any) error {
	return &budgetError{msg: fmt.Sprintf(format, args...)}
}

// limits are the budget of a meter; tests shrink them.
type limits struct {
	value, total, steps, depth int
	duration                   time.Duration
}

var defaultLimits = limits{value: MaxValueBytes, total: MaxTotalBytes, steps: MaxSteps, depth: MaxDepth, duration: MaxDuration}

// A meter accounts for the work of one evaluation. It is not safe for
// concurrent use; every evaluation has its own.
type meter struct {
	lim      limits
	deadline time.Time
	steps    int
	bytes    int
}

func newMeter() *meter {
	return &meter{lim: defaultLimits, deadline: time.Now().Add(defaultLimits.duration)}
}

// step counts one function call or loop iteration and checks the clock.
func (m *meter) step() error {
	m.steps++
	if m.steps > m.lim.steps {
		return overBudget("the expression takes more than %d steps (function calls and loop iterations)", m.lim.steps)
	}
	if m.steps%64 == 0 && time.Now().After(m.deadline) {
		return overBudget("the expression runs longer than %s", m.lim.duration)
	}
	return nil
}

// reserve accounts for n bytes that what is about to build, before it is
// built.
func (m *meter) reserve(what string, n int) error {
	return m.grow(what, 0, n)
}

// grow accounts for n more bytes that what is about to append to the cur
// bytes it has built so far.
func (m *meter) grow(what string, cur, n int) error {
	if size := add(cur, n); size > m.lim.value || size < 0 {
		return overBudget("%s would build %s; an expression may build values of at most %s", what, byteSize(size), byteSize(m.lim.value))
	}
	return m.spend(what, n)
}

// built accounts for a value that what has just built from parts that
// already existed (a literal, an element of map): it may share one large
// value many times, so it is measured as the JSON it would become.
func (m *meter) built(what string, v any) error {
	n, deep := m.measure(v, m.lim.value)
	if deep {
		return overBudget("%s builds a value nested more than %d levels deep", what, m.lim.depth)
	}
	if n > m.lim.value {
		return overBudget("%s builds a value of more than %s as JSON; an expression may build values of at most %s", what, byteSize(m.lim.value), byteSize(m.lim.value))
	}
	return m.spend(what, n)
}

// measure returns the size of v as JSON, or some number above limit as soon
// as it passes limit, so its cost is bounded by limit whatever v shares.
func (m *meter) measure(v any, limit int) (n int, deep bool) {
	s := sizer{limit: limit, maxDepth: m.lim.depth}
	s.add(v, 0)
	return s.n, s.deep
}

type sizer struct {
	n, limit, maxDepth int
	deep               bool
}

func (s *sizer) over() bool { return s.n > s.limit || s.deep }

func (s *sizer) add(v any, depth int) {
	if s.over() {
		return
	}
	if depth > s.maxDepth {
		s.deep = true
		return
	}
	switch x := v.(type) {
	case nil:
		s.n += 4
	case bool:
		s.n += 5
	case string:
		s.n += len(x) + 2
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		s.n += 8
	case []any:
		s.n += 2
		for _, e := range x {
			s.n++
			s.add(e, depth+1)
			if s.over() {
				return
			}
		}
	case map[string]any:
		s.n += 2
		for k, e := range x {
			s.n += len(k) + 4
			s.add(e, depth+1)
			if s.over() {
				return
			}
		}
	case []int:
		s.n += 2 + 9*len(x)
	case []float64:
		s.n += 2 + 9*len(x)
	case []string:
		s.n += 2
		for _, e := range x {
			s.n += len(e) + 3
			if s.over() {
				return
			}
		}
	default:
		s.addReflect(reflect.ValueOf(v), depth)
	}
}

func (s *sizer) addReflect(rv reflect.Value, depth int) {
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		s.n += 2
		for i := range rv.Len() {
			s.n++
			s.add(rv.Index(i).Interface(), depth+1)
			if s.over() {
				return
			}
		}
	case reflect.Map:
		s.n += 2
		it := rv.MapRange()
		for it.Next() {
			s.n += 2
			s.add(it.Key().Interface(), depth+1)
			s.add(it.Value().Interface(), depth+1)
			if s.over() {
				return
			}
		}
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			s.n += 4
			return
		}
		s.add(rv.Elem().Interface(), depth+1)
	case reflect.String:
		s.n += rv.Len() + 2
	default:
		s.n += 8 // numbers, times, durations, functions
	}
}

func byteSize(n int) string {
	switch {
	case n < 0:
		return "more than 8 EiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// mul returns a*b, or -1 when it overflows (which reserve refuses).
func mul(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	if a != 0 && b > math.MaxInt/a {
		return -1
	}
	return a * b
}

// Names of the guard functions the patcher inserts. They are not valid
// identifiers, so an expression cannot call them itself.
const (
	fnStep  = "$duet.step"  // counts a loop iteration
	fnValue = "$duet.value" // accounts for a value just built
	fnAdd   = "$duet.add"   // + that checks string sizes first
	fnRange = "$duet.range" // a..b that checks the size first
)

// guard rewrites an expression tree so that every loop iteration is counted
// and what the expression builds is checked against the budget: predicate
// bodies start with a step, the element map produces and the accumulator
// reduce produces are measured each iteration, list and map literals and the
// results of map and reduce are measured, and + and .. on strings or unknown
// types go through size-checked functions. Builtin functions are replaced by
// checked versions (see meter.options), so they need no patching here.
type guard struct{}

func (guard) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BuiltinNode:
		switch n.Name {
		case "map", "reduce":
			// Each element (accumulator) may share a large value: measure it
			// as it is produced, before the next iteration builds more.
			if p, ok := n.Arguments[1].(*ast.PredicateNode); ok {
				seq := p.Node.(*ast.SequenceNode)
				seq.Nodes[1] = call(fnValue, seq.Nodes[1])
			}
			ast.Patch(node, call(fnValue, n))
		}
	case *ast.PredicateNode:
		n.Node = &ast.SequenceNode{Nodes: []ast.Node{call(fnStep), n.Node}}
	case *ast.ArrayNode, *ast.MapNode:
		// A literal of constants is as large as its source and shares
		// nothing; one that refers to values may repeat a large one.
		if !constant(n) {
			ast.Patch(node, call(fnValue, n))
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "+":
			if (isString(n.Left) || isUnknown(n.Left)) && (isString(n.Right) || isUnknown(n.Right)) {
				ast.Patch(node, call(fnAdd, n.Left, n.Right))
			}
		case "..":
			if (isInt(n.Left) || isUnknown(n.Left)) && (isInt(n.Right) || isUnknown(n.Right)) {
				ast.Patch(node, call(fnRange, n.Left, n.Right))
			}
		}
	}
}

// constant reports whether n is a literal made of literals only.
func constant(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.NilNode, *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode, *ast.StringNode, *ast.ConstantNode:
		return true
	case *ast.UnaryNode:
		return constant(x.Node)
	case *ast.ArrayNode:
		for _, e := range x.Nodes {
			if !constant(e) {
				return false
			}
		}
		return true
	case *ast.MapNode:
		for _, p := range x.Pairs {
			if !constant(p) {
				return false
			}
		}
		return true
	case *ast.PairNode:
		return constant(x.Key) && constant(x.Value)
	}
	return false
}

func call(name string, args ...ast.Node) *ast.CallNode {
	return &ast.CallNode{Callee: &ast.IdentifierNode{Value: name}, Arguments: args}
}

func kindOf(n ast.Node) reflect.Kind {
	t := n.Type()
	if t == nil {
		return reflect.Interface
	}
	return t.Kind()
}

func isUnknown(n ast.Node) bool { return kindOf(n) == reflect.Interface }
func isString(n ast.Node) bool  { return kindOf(n) == reflect.String }
func isInt(n ast.Node) bool {
	switch kindOf(n) {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

var (
	anyType    = reflect.TypeOf((*any)(nil)).Elem()
	stringType = reflect.TypeOf("")
	intsType   = reflect.TypeOf([]int{})
)

// options registers the guard functions and a checked version of the
// builtin functions the expression calls (used, from a first parse; builtins
// with a predicate are loops, counted by guard) bound to m, plus the patcher.
func (m *meter) options(used map[string]bool) []expr.Option {
	return []expr.Option{
		func(c *conf.Config) {
			for name := range used {
				i, ok := builtin.Index[name]
				if !ok || builtin.Builtins[i].Predicate {
					continue
				}
				f := builtin.Builtins[i]
				c.Functions[f.Name] = &builtin.Function{Name: f.Name, Func: m.checked(f), Types: f.Types, Validate: f.Validate}
			}
			c.Functions[fnStep] = &builtin.Function{Name: fnStep, Func: func(...any) (any, error) { return nil, m.step() },
				Validate: func([]reflect.Type) (reflect.Type, error) { return anyType, nil }}
			c.Functions[fnValue] = &builtin.Function{Name: fnValue, Func: m.value, Validate: sameType}
			c.Functions[fnAdd] = &builtin.Function{Name: fnAdd, Func: m.add, Validate: func(args []reflect.Type) (reflect.Type, error) {
				if len(args) == 2 && args[0] == stringType && args[1] == stringType {
					return stringType, nil
				}
				return anyType, nil
			}}
			c.Functions[fnRange] = &builtin.Function{Name: fnRange, Func: m.rangeOf,
				Validate: func([]reflect.Type) (reflect.Type, error) { return intsType, nil }}
		},
		expr.Patch(guard{}),
	}
}

// sameType keeps the static type of the value a guard function passes on.
func sameType(args []reflect.Type) (reflect.Type, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("want 1 argument, got %d", len(args))
	}
	return args[0], nil
}

func (m *meter) value(args ...any) (any, error) {
	if err := m.step(); err != nil {
		return nil, err
	}
	return args[0], m.built("a list, map or loop", args[0])
}

func (m *meter) add(args ...any) (any, error) {
	if err := m.step(); err != nil {
		return nil, err
	}
	a, b := args[0], args[1]
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			if err := m.reserve("+", len(sa)+len(sb)); err != nil {
				return nil, err
			}
			return sa + sb, nil
		}
	}
	return runtime.Add(a, b), nil
}

func (m *meter) rangeOf(args ...any) (any, error) {
	if err := m.step(); err != nil {
		return nil, err
	}
	lo, hi := runtime.ToInt(args[0]), runtime.ToInt(args[1])
	if hi >= lo {
		n := hi - lo + 1
		if n <= 0 { // overflow
			n = math.MaxInt
		}
		if err := m.reserve("..", mul(n, 9)); err != nil {
			return nil, err
		}
	}
	return runtime.MakeRange(lo, hi), nil
}

// checked wraps builtin f: it counts a step, checks what f is about to build
// when that can be much larger than its arguments (see precheck), runs f, and
// accounts for the memory its result takes (a string's bytes, a list's or
// map's slots; the elements are values that already existed).
func (m *meter) checked(f *builtin.Function) func(args ...any) (any, error) {
	pre := precheck[f.Name]
	impl := func(args ...any) (any, error) {
		switch {
		case f.Fast != nil:
			if len(args) != 1 {
				return nil, fmt.Errorf("%s: want 1 argument, got %d", f.Name, len(args))
			}
			return f.Fast(args[0]), nil
		case f.Safe != nil:
			out, _, err := f.Safe(args...)
			return out, err
		}
		return f.Func(args...)
	}
	if f.Name == "uniq" {
		impl = m.uniq
	}
	return func(args ...any) (any, error) {
		if err := m.step(); err != nil {
			return nil, err
		}
		if pre != nil {
			if err := pre(m, args); err != nil {
				return nil, err
			}
		}
		out, err := impl(args...)
		if err != nil || pre != nil || accessors[f.Name] {
			return out, err
		}
		return out, m.spend(f.Name, shallowSize(out))
	}
}

// spend accounts for n bytes already built, against the total only.
func (m *meter) spend(what string, n int) error {
	m.bytes += n
	if m.bytes > m.lim.total {
		return overBudget("the expression builds more than %s in total (%s went over)", byteSize(m.lim.total), what)
	}
	return nil
}

// shallowSize is the memory a value takes besides the values it refers to.
func shallowSize(v any) int {
	if s, ok := v.(string); ok {
		return len(s)
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return 16 * rv.Len()
	}
	return 0
}

// accessors return (a part of) a value that exists already.
var accessors = map[string]bool{"get": true, "first": true, "last": true, "trim": true, "trimPrefix": true, "trimSuffix": true}

// precheck holds, for the builtins whose result can be much larger than
// their arguments, a check of the size of the result computed without
// building it.
var precheck = map[string]func(m *meter, args []any) error{
	"repeat": func(m *meter, args []any) error {
		s, ok := args[0].(string)
		if !ok || len(args) != 2 {
			return nil // the builtin reports the error
		}
		n := runtime.ToInt(args[1])
		if n < 0 {
			return nil
		}
		return m.reserve("repeat", mul(len(s), n))
	},
	"replace": func(m *meter, args []any) error {
		if len(args) < 3 {
			return nil
		}
		s, ok1 := args[0].(string)
		old, ok2 := args[1].(string)
		repl, ok3 := args[2].(string)
		if !ok1 || !ok2 || !ok3 {
			return nil
		}
		count := matches(s, old)
		if len(args) == 4 {
			if n := runtime.ToInt(args[3]); n >= 0 && n < count {
				count = n
			}
		}
		grow := len(repl) - len(old)
		if grow <= 0 {
			return m.reserve("replace", len(s))
		}
		return m.reserve("replace", add(len(s), mul(count, grow)))
	},
	"join": func(m *meter, args []any) error {
		glue := ""
		if len(args) == 2 {
			glue, _ = args[1].(string)
		}
		var n, items int
		switch x := args[0].(type) {
		case []string:
			for _, s := range x {
				n = add(n, len(s))
			}
			items = len(x)
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok {
					n = add(n, len(s))
				}
			}
			items = len(x)
		default:
			return nil
		}
		if items > 1 {
			n = add(n, mul(items-1, len(glue)))
		}
		return m.reserve("join", n)
	},
	"split":      splitCheck("split"),
	"splitAfter": splitCheck("splitAfter"),
	"toJSON": func(m *meter, args []any) error {
		return m.fits("toJSON", args[0], 3) // indentation can triple a deep value
	},
	"string": func(m *meter, args []any) error {
		return m.fits("string", args[0], 1)
	},
	"fromJSON": func(m *meter, args []any) error {
		if s, ok := args[0].(string); ok {
			return m.reserve("fromJSON", len(s))
		}
		return nil
	},
	// The variadic builtins walk all their arguments together; concat and
	// flatten copy them.
	"concat":  argsCheck("concat"),
	"flatten": argsCheck("flatten"),
	"max":     argsCheck("max"),
	"min":     argsCheck("min"),
	"mean":    argsCheck("mean"),
	"median":  argsCheck("median"),
}

func splitCheck(name string) func(m *meter, args []any) error {
	return func(m *meter, args []any) error {
		if len(args) < 2 {
			return nil
		}
		s, ok1 := args[0].(string)
		sep, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil
		}
		pieces := matches(s, sep) + 1
		if len(args) == 3 {
			if n := runtime.ToInt(args[2]); n > 0 && n < pieces {
				pieces = n
			}
		}
		// Each piece costs its quotes and comma as JSON, and a string header
		// of 16 bytes in memory: count the latter.
		return m.reserve(name, add(len(s), mul(pieces, 16)))
	}
}

func argsCheck(name string) func(m *meter, args []any) error {
	return func(m *meter, args []any) error {
		if len(args) < 2 {
			return nil // one argument is walked once, like any other function's
		}
		return m.fits(name+" of its arguments", args, 1)
	}
}

// fits measures v (times factor) against the value limit and reserves it.
func (m *meter) fits(what string, v any, factor int) error {
	limit := m.lim.value / factor
	n, deep := m.measure(v, limit)
	if deep {
		return overBudget("%s: the value is nested more than %d levels deep", what, m.lim.depth)
	}
	if n > limit {
		return overBudget("%s would build more than %s; an expression may build values of at most %s", what, byteSize(m.lim.value), byteSize(m.lim.value))
	}
	return m.reserve(what, mul(n, factor))
}

// matches counts the non-overlapping occurrences of sep in s the way
// strings.Replace and strings.Split do ("" matches between every rune).
func matches(s, sep string) int {
	if sep == "" {
		return utf8.RuneCountInString(s) + 1
	}
	return strings.Count(s, sep)
}

// add returns a+b, or -1 when it overflows (which reserve refuses).
func add(a, b int) int {
	if a < 0 || b < 0 || a > math.MaxInt-b {
		return -1
	}
	return a + b
}

// uniq is the builtin uniq (first occurrences, in order, equal as == says)
// without its quadratic time for scalars; other elements are compared one by
// one, a step each.
func (m *meter) uniq(args ...any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("invalid number of arguments (expected 1, got %d)", len(args))
	}
	v := reflect.ValueOf(args[0])
	if v.Kind() != reflect.Array && v.Kind() != reflect.Slice {
		return nil, fmt.Errorf("cannot uniq %s", v.Kind())
	}
	type key struct {
		kind byte
		f    float64
		s    string
	}
	seen := map[key]bool{}
	var others []any
	out := []any{}
	for i := range v.Len() {
		e := v.Index(i).Interface()
		var k key
		hashable := true
		switch x := e.(type) {
		case nil:
			k = key{kind: 'n'}
		case bool:
			k = key{kind: 'b', s: fmt.Sprint(x)}
		case string:
			k = key{kind: 's', s: x}
		case float64:
			k = key{kind: 'f', f: x}
		case int:
			k = key{kind: 'f', f: float64(x)}
			hashable = int(float64(x)) == x
		default:
			hashable = false
		}
		if hashable && (k.kind != 'f' || !math.IsNaN(k.f)) {
			if !seen[k] {
				seen[k] = true
				out = append(out, e)
			}
			continue
		}
		dup := false
		for _, o := range others {
			if err := m.step(); err != nil {
				return nil, err
			}
			if runtime.Equal(e, o) {
				dup = true
				break
			}
		}
		if !dup {
			// Mixed scalar/non-scalar equality (1 == 1.0 is handled by the
			// key) cannot happen between a hashable and an unhashable value.
			others = append(others, e)
			out = append(out, e)
		}
	}
	return out, nil
}
