package duet

import (
	"context"
	"sync"
)

// A ReadScope groups the reads that make one answer (get_test_task reads
// a task, its case count and its latest run): a store that caches reads
// may check the freshness of its cache once per scope instead of once per
// read. Writes made through the same store handle inside the scope still
// take effect for the reads after them; a change made elsewhere during the
// scope may be seen only by the next scope, as if the scope's reads were
// one snapshot taken at its first read. Keep a scope to one short group of
// reads — never around a call that waits or polls.
type ReadScope struct {
	mu sync.Mutex
	m  map[any]any
}

type readScopeKey struct{}

// WithReadScope returns a context carrying a new ReadScope.
func WithReadScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, readScopeKey{}, &ReadScope{})
}

// ReadScopeFrom returns the context's ReadScope, or nil.
func ReadScopeFrom(ctx context.Context) *ReadScope {
	s, _ := ctx.Value(readScopeKey{}).(*ReadScope)
	return s
}

// Load returns what a store kept in the scope under key.
func (s *ReadScope) Load(key any) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok
}

// Store keeps v in the scope under key (a store's own unexported type).
func (s *ReadScope) Store(key, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[any]any{}
	}
	s.m[key] = v
}
