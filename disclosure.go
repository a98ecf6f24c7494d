package duet

// Disclosure is how much of a run's results a viewer is shown. A run executes
// with its executor's own credentials (MCP registrations, logins typed from
// their values), so what it obtained is the executor's to see.
type Disclosure string

// Disclosures.
const (
	// DiscloseFull shows everything stored: step outputs (tool inputs and
	// results, response bodies, extracted text), saved variables, error
	// messages and screenshots.
	DiscloseFull Disclosure = "full"
	// DiscloseRestricted shows statuses, timings and error codes: step
	// outputs, variables and screenshots are left out and error messages
	// are replaced by a note naming who may see them.
	DiscloseRestricted Disclosure = "restricted"
)

// RunDisclosure is the one rule that decides how much of run viewer sees:
// in full when viewer is the run's executor (TriggeredBy), restricted for
// anyone else who may see the run (the task's owner, other users it is
// shared with) and for an unnamed viewer. Every surface that shows results —
// MCP tools, MCP resources, reports, the CLI — applies it through
// DiscloseRun.
func RunDisclosure(viewer string, run *Run) Disclosure {
	if run != nil && viewer != "" && viewer == run.TriggeredBy {
		return DiscloseFull
	}
	return DiscloseRestricted
}

// DiscloseRun applies RunDisclosure: when viewer may not see everything, it
// reduces run and execs (as loaded for this viewer) in place to the
// restricted view. It returns the disclosure applied.
func DiscloseRun(viewer string, run *Run, execs ...*Execution) Disclosure {
	d := RunDisclosure(viewer, run)
	if d == DiscloseFull {
		return d
	}
	note := WithheldNote(run)
	if run.ErrorMessage != "" {
		run.ErrorMessage = note
	}
	for _, p := range run.PostRun {
		if p != nil && p.ErrorMessage != "" {
			p.ErrorMessage = note
		}
	}
	for _, r := range run.Hooks {
		r.restrict(note)
	}
	for _, x := range execs {
		x.restrict(note)
	}
	return d
}

// WithheldNote is the text that replaces an error message in a restricted
// view of run.
func WithheldNote(run *Run) string {
	who := "the person who ran it"
	if run != nil && run.TriggeredBy != "" {
		who = run.TriggeredBy
	}
	return "(details withheld: shown only to " + who + ", whose credentials the run used)"
}

func (x *Execution) restrict(note string) {
	if x == nil {
		return
	}
	x.Vars = nil
	if x.ErrorMessage != "" {
		x.ErrorMessage = note
	}
	for _, r := range x.Results {
		r.restrict(note)
	}
	for _, a := range x.Attempts {
		if a == nil {
			continue
		}
		if a.ErrorMessage != "" {
			a.ErrorMessage = note
		}
		for _, r := range a.Results {
			r.restrict(note)
		}
	}
}

func (r *StepResult) restrict(note string) {
	if r == nil {
		return
	}
	r.Output, r.Artifacts = nil, nil
	if r.ErrorMessage != "" {
		r.ErrorMessage = note
	}
	if r.AI != nil {
		// What the model was shown and answered (the transcript), and the
		// values its actions typed, are the executor's.
		ai := *r.AI
		ai.Transcript, ai.Actions = "", nil
		for _, a := range r.AI.Actions {
			a.Value = ""
			ai.Actions = append(ai.Actions, a)
		}
		r.AI = &ai
	}
	for _, c := range r.Children {
		c.restrict(note)
	}
}
