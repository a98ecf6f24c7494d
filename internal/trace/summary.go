package trace

import (
	"encoding/json"

	"github.com/duet-test/duet"
)

// Summary is a trace cut to what a model can read: the step list, and the
// console lines and network rows that bear on the failing step (its own,
// and the errors and failed requests before it) — never the DOM, the
// screenshots or the bodies.
type Summary struct {
	Case
	Status    duet.RunStatus `json:"status"`
	ErrorCode duet.Code      `json:"errorCode,omitempty"`
	Error     string         `json:"error,omitempty"`
	Steps     []SummaryStep  `json:"steps"`
	// FailingStep is the index of the step that failed the case (-1: none).
	FailingStep int              `json:"failingStep"`
	Console     []ConsoleLine    `json:"console"`
	Network     []SummaryRequest `json:"network"`
	// Omitted counts the lines and rows left out to stay within the
	// budget, or as not bearing on the failing step.
	Omitted struct {
		Console int `json:"console"`
		Network int `json:"network"`
	} `json:"omitted"`
	Cut *Cut `json:"cut,omitempty"`
}

// SummaryStep is a step of a Summary.
type SummaryStep struct {
	Index      int            `json:"index"`
	Kind       duet.StepKind  `json:"kind"`
	Name       string         `json:"name"`
	Status     duet.RunStatus `json:"status"`
	DurationMs int64          `json:"durationMs"`
	ErrorCode  duet.Code      `json:"errorCode,omitempty"`
	Error      string         `json:"error,omitempty"`
	URL        string         `json:"url,omitempty"`
}

// SummaryRequest is a network row of a Summary.
type SummaryRequest struct {
	Step         int     `json:"step"`
	Method       string  `json:"method"`
	URL          string  `json:"url"`
	Status       int     `json:"status"`
	Type         string  `json:"type,omitempty"`
	DurationMs   float64 `json:"durationMs"`
	EncodedBytes int64   `json:"encodedBytes"`
	Failed       string  `json:"failed,omitempty"`
}

// Summarize returns the summary of t in at most maxBytes of JSON (0 means
// 32 KiB): rows are dropped, the oldest first, until it fits.
func Summarize(t *Trace, maxBytes int) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = 32 << 10
	}
	s := Summary{Case: t.Case, Status: t.Status,
		ErrorCode: t.ErrorCode, Error: t.Error, Steps: []SummaryStep{}, FailingStep: -1, Console: []ConsoleLine{}, Network: []SummaryRequest{}, Cut: t.Cut}
	for _, st := range t.Steps {
		s.Steps = append(s.Steps, SummaryStep{Index: st.Index, Kind: st.Kind, Name: st.Name, Status: st.Status, DurationMs: st.EndMs - st.StartMs,
			ErrorCode: st.ErrorCode, Error: st.Error, URL: st.URL})
		if s.FailingStep < 0 && failed(st.Status) {
			s.FailingStep = st.Index
		}
	}
	focus := s.FailingStep
	if focus < 0 && len(t.Steps) > 0 {
		focus = t.Steps[len(t.Steps)-1].Index
	}
	for _, l := range t.Console {
		if l.Step == focus || (l.Step < focus && (l.Type == "error" || l.Type == "exception" || l.Type == "warning")) {
			s.Console = append(s.Console, l)
		} else {
			s.Omitted.Console++
		}
	}
	for _, r := range t.Network {
		if r.Step == focus || (r.Step < focus && (r.Status >= 400 || r.Failed != "")) {
			s.Network = append(s.Network, SummaryRequest{Step: r.Step, Method: r.Method, URL: r.URL, Status: r.Status, Type: r.Type,
				DurationMs: r.DurationMs, EncodedBytes: r.EncodedBytes, Failed: r.Failed})
		} else {
			s.Omitted.Network++
		}
	}
	for {
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		if len(b) <= maxBytes || (len(s.Console) == 0 && len(s.Network) == 0) {
			return b, nil
		}
		// Drop the oldest row of the longer list.
		if len(s.Network) >= len(s.Console) {
			s.Network = s.Network[1:]
			s.Omitted.Network++
		} else {
			s.Console = s.Console[1:]
			s.Omitted.Console++
		}
	}
}
