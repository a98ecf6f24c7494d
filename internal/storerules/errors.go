package storerules

import (
	"context"
	"errors"

	"github.com/duet-test/duet"
)

// CodedError is the part of a driver's error mapping that is the same on
// every engine: an error that already carries a code (*duet.Error) as it
// is, one of a cancelled context CANCELLED, one of a context past its
// deadline TIMEOUT; nil for any other error, which the driver maps.
func CodedError(err error) error {
	var de *duet.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return err
	case errors.Is(err, context.Canceled):
		return duet.WrapError(duet.CodeCancelled, err, "cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		return duet.WrapError(duet.CodeTimeout, err, "timed out")
	}
	return nil
}
