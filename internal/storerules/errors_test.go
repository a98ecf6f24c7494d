package storerules

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/duet-test/duet"
)

// TestCodedError: a coded error passes as it is, a context's end gets its
// code through wrapping, anything else is left to the driver (nil).
func TestCodedError(t *testing.T) {
	conflict := duet.Errorf(duet.CodeConflict, "taken")
	for _, tt := range []struct {
		err  error
		want duet.Code
	}{
		{fmt.Errorf("in a tx: %w", conflict), duet.CodeConflict},
		{fmt.Errorf("query: %w", context.Canceled), duet.CodeCancelled},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), duet.CodeTimeout},
	} {
		if got := CodedError(tt.err); got == nil || duet.ErrorCode(got) != tt.want || !errors.Is(got, errors.Unwrap(tt.err)) {
			t.Errorf("CodedError(%v) = %v, want %s wrapping it", tt.err, got, tt.want)
		}
	}
	if got := CodedError(errors.New("disk I/O error")); got != nil {
		t.Errorf("an engine's error: got %v, want nil (the driver maps it)", got)
	}
	if CodedError(nil) != nil {
		t.Error("nil: want nil")
	}
}
