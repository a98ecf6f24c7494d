package api

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"net/http"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/pixelmatch"
)

// Baselines: the reference screenshots of assertScreenshot steps. A
// baseline is its owner's — the executor whose run recorded it, with their
// credentials — so only they list, see, approve or reject it; every
// decision is audited (approveBaseline, rejectBaseline, with the baseline's
// id).

// BaselinesIn selects baselines.
type BaselinesIn struct {
	TaskID string              `json:"taskId,omitempty" jsonschema:"only this task's"`
	Status duet.BaselineStatus `json:"status,omitempty" jsonschema:"pending, approved or rejected"`
}

// BaselineList is the caller's baselines, newest first.
type BaselineList struct {
	Baselines []*duet.Baseline `json:"baselines"`
}

// BaselineDetail is a baseline and the one a comparison uses now for its
// key (Current; nil when none, or when it is this one).
type BaselineDetail struct {
	Baseline *duet.Baseline `json:"baseline"`
	Current  *duet.Baseline `json:"current,omitempty" jsonschema:"the baseline comparisons use now: what approving this one replaces"`
	// DiffRatio is the share of pixels that differ from Current.
	DiffRatio *float64 `json:"diffRatio,omitempty"`
}

// ListBaselines lists the caller's baselines. Returns INVALID_ARGUMENT.
func (s *Service) ListBaselines(ctx context.Context, c duet.Caller, in BaselinesIn) (BaselineList, error) {
	return govern(ctx, s, c, "listBaselines", in, func(ctx context.Context) (BaselineList, error) {
		switch in.Status {
		case "", duet.BaselinePending, duet.BaselineApproved, duet.BaselineRejected:
		default:
			return BaselineList{}, duet.Errorf(duet.CodeInvalidArgument, "status: want pending, approved or rejected, got %q", in.Status)
		}
		taskID, err := s.taskID(ctx, c, in.TaskID) // its id, or a name the caller sees once
		if err != nil {
			return BaselineList{}, err
		}
		list, err := s.d.Store.FindBaselines(ctx, duet.BaselineFilter{Owner: c.UserID, TaskID: taskID, Status: in.Status, Limit: 200})
		return BaselineList{Baselines: list}, err
	})
}

// GetBaseline returns one of the caller's baselines with the one in use
// for its key. Returns NOT_FOUND.
func (s *Service) GetBaseline(ctx context.Context, c duet.Caller, id string) (BaselineDetail, error) {
	return govern(ctx, s, c, "getBaseline", nil, func(ctx context.Context) (BaselineDetail, error) {
		d, _, _, err := s.baseline(ctx, c, id)
		return d, err
	})
}

// baseline reads id with the one in use, and their images.
func (s *Service) baseline(ctx context.Context, c duet.Caller, id string) (BaselineDetail, []byte, []byte, error) {
	b, err := s.d.Store.FindBaseline(ctx, c.UserID, id)
	if err != nil {
		return BaselineDetail{}, nil, nil, err
	}
	img := b.Image
	b.Image = nil
	d := BaselineDetail{Baseline: b}
	cur, err := s.d.Store.FindCurrentBaseline(ctx, b.BaselineKey, b.Fingerprint)
	switch {
	case duet.ErrorCode(err) == duet.CodeNotFound:
		return d, img, nil, nil
	case err != nil:
		return BaselineDetail{}, nil, nil, err
	case cur.ID == b.ID:
		return d, img, nil, nil
	}
	curImg := cur.Image
	cur.Image = nil
	d.Current = cur
	if n, pixels, _, err := diff(curImg, img); err == nil && pixels > 0 {
		r := float64(n) / float64(pixels)
		d.DiffRatio = &r
	}
	return d, img, curImg, nil
}

// diff compares two PNGs: the pixels that differ, of how many, and the
// diff image (PNG).
func diff(a, b []byte) (int, int, []byte, error) {
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		return 0, 0, nil, err
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return 0, 0, nil, err
	}
	n, img, err := pixelmatch.Compare(ia, ib, pixelmatch.Options{})
	if errors.Is(err, pixelmatch.ErrSize) {
		px := ib.Bounds().Dx() * ib.Bounds().Dy()
		return px, px, nil, nil
	}
	if err != nil {
		return 0, 0, nil, err
	}
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		return 0, 0, nil, err
	}
	return n, ib.Bounds().Dx() * ib.Bounds().Dy(), out.Bytes(), nil
}

// BaselineImage returns a PNG of one of the caller's baselines: which is
// "candidate" (the baseline itself), "current" (the one in use for its
// key) or "diff" (the two compared: what differs in red). Returns
// NOT_FOUND (also when there is no current one), INVALID_ARGUMENT.
func (s *Service) BaselineImage(ctx context.Context, c duet.Caller, id, which string) ([]byte, error) {
	var out []byte
	err := s.d.Catalog.Govern(ctx, catalogOp(c, "getBaselineImage", id), func(ctx context.Context) (int, error) {
		_, img, curImg, err := s.baseline(ctx, c, id)
		if err != nil {
			return 0, err
		}
		switch which {
		case "", "candidate":
			out = img
		case "current":
			out = curImg
		case "diff":
			if curImg != nil {
				if _, _, out, err = diff(curImg, img); err != nil {
					return 0, err
				}
			}
		default:
			return 0, duet.Errorf(duet.CodeInvalidArgument, "which: want candidate, current or diff, got %.40q", which)
		}
		if out == nil {
			return 0, duet.Errorf(duet.CodeNotFound, "baseline %s has no %s image (it is the one in use, or its key has no other)", id, which)
		}
		return len(out), nil
	})
	return out, err
}

// DecideBaseline approves or rejects one of the caller's pending
// baselines; an approved one is what later runs of its key compare
// against. The decision is audited (approveBaseline or rejectBaseline,
// with the baseline's id). Returns NOT_FOUND, CONFLICT.
func (s *Service) DecideBaseline(ctx context.Context, c duet.Caller, id string, approve bool) (*duet.Baseline, error) {
	op, status := "rejectBaseline", duet.BaselineRejected
	if approve {
		op, status = "approveBaseline", duet.BaselineApproved
	}
	var out *duet.Baseline
	err := s.d.Catalog.Govern(ctx, catalogOp(c, op, id), func(ctx context.Context) (int, error) {
		var err error
		out, err = s.d.Store.DecideBaseline(ctx, c.UserID, id, status)
		return 0, err
	})
	return out, err
}

// baselineRoutes are the REST routes of baselines.
func baselineRoutes() []*route {
	return []*route{
		op("GET", Prefix+"/baselines", "listBaselines", "baselines", "Your visual baselines (assertScreenshot), newest first",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (BaselineList, error) {
				q := r.URL.Query()
				return s.ListBaselines(ctx, c, BaselinesIn{TaskID: q.Get("taskId"), Status: duet.BaselineStatus(q.Get("status"))})
			}, query("taskId", "only this task's"), query("status", "pending, approved or rejected")),
		byID("GET", Prefix+"/baselines/{baselineId}", "getBaseline", "baselines", "One of your baselines, with the one comparisons use now", "the baseline's id", (*Service).GetBaseline),
		{method: "GET", path: Prefix + "/baselines/{baselineId}/image", id: "getBaselineImage", tag: "baselines", status: http.StatusOK, ctype: "image/png",
			summary: "A baseline's image (PNG): the baseline, the one in use for its key, or the two compared",
			params:  []param{path("baselineId", "the baseline's id"), query("which", "candidate (default), current or diff")},
			serve: func(h *Handler, w http.ResponseWriter, r *http.Request, c duet.Caller) (any, error) {
				data, err := h.svc.BaselineImage(r.Context(), c, r.PathValue("baselineId"), r.URL.Query().Get("which"))
				if err != nil {
					return nil, err
				}
				w.Header().Set("Content-Type", "image/png")
				w.Write(data)
				return nil, nil
			}},
		op("POST", Prefix+"/baselines/{baselineId}/approve", "approveBaseline", "baselines", "Approve your pending baseline: later runs compare against it (audited)",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (*duet.Baseline, error) {
				return s.DecideBaseline(ctx, c, r.PathValue("baselineId"), true)
			}, path("baselineId", "the baseline's id")),
		op("POST", Prefix+"/baselines/{baselineId}/reject", "rejectBaseline", "baselines", "Reject your pending baseline: it is never compared against (audited)",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (*duet.Baseline, error) {
				return s.DecideBaseline(ctx, c, r.PathValue("baselineId"), false)
			}, path("baselineId", "the baseline's id")),
	}
}

// catalogOp is the governed operation op of c on the named object.
func catalogOp(c duet.Caller, op, name string) catalog.Op {
	return catalog.Op{Caller: c, Method: op, Name: name}
}
