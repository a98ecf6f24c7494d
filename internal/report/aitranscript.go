package report

import (
	"context"
	"fmt"
)

// text reads an AI step's transcript (what its model was shown and
// answered, redacted by value when it was kept) within what the call may
// send, as the screenshots are; a note says why when it cannot. Only a
// result the viewer may see in full names its transcript
// (duet.DiscloseRun), so only the run's executor gets one.
func (r *shotReader) text(ctx context.Context, id string) string {
	if r.arts == nil {
		return ""
	}
	if r.left == 0 {
		return "(" + r.over() + ")"
	}
	data, err := r.arts.Read(ctx, id)
	if err != nil {
		return fmt.Sprintf("(the transcript %s is not available: %s)", id, err)
	}
	if r.left >= 0 {
		if len(data) > r.left {
			r.left = 0
			return "(" + r.over() + ")"
		}
		r.left -= len(data)
	}
	return string(data)
}
