package duet

import (
	"context"
	"time"
)

// Step kinds of the evidence a case gathers (their entries are in
// internal/step).
const (
	StepAssertScreenshot  StepKind = "assertScreenshot"  // compare the page with its approved baseline
	StepAssertAccessible  StepKind = "assertAccessible"  // run axe-core on the page
	StepAssertPerformance StepKind = "assertPerformance" // check the page's Core Web Vitals
)

// EvidenceStep holds the parameters of the evidence kinds; each uses the
// fields its documentation names. Strings are not templates.
type EvidenceStep struct {
	// assertScreenshot: the baseline's name, the element to capture
	// (Selector, "" the viewport), the elements to mask, and the
	// tolerance: the share of pixels that may differ (MaxDiffPixelRatio)
	// and the colour distance under which two pixels are the same
	// (Threshold, 0 to 1; 0 means 0.1).
	Name              string   `json:"name,omitempty"`
	Selector          string   `json:"selector,omitempty"`
	Mask              []string `json:"mask,omitempty"`
	MaxDiffPixelRatio float64  `json:"maxDiffPixelRatio,omitempty"`
	Threshold         float64  `json:"threshold,omitempty"`

	// assertAccessible: the axe-core rule tags to run (default wcag2a and
	// wcag2aa), the parts of the page to check or leave out, and the
	// lowest impact that fails the case (minor, moderate, serious,
	// critical; default serious).
	Tags    []string `json:"tags,omitempty"`
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	Impact  string   `json:"impact,omitempty"`

	// assertPerformance: the budget of each metric (lcp, fcp, cls, ttfb,
	// inp, load, domContentLoaded), as written ("< 2500ms", "<= 0.1").
	Budgets map[string]string `json:"budgets,omitempty"`
}

// BaselineStatus is where a baseline stands. Values are wire values.
type BaselineStatus string

// Baseline statuses.
const (
	BaselinePending  BaselineStatus = "pending"  // recorded by a run, awaiting its owner's decision
	BaselineApproved BaselineStatus = "approved" // what comparisons use (the newest approved)
	BaselineRejected BaselineStatus = "rejected" // never used
)

// BaselineKey names what a baseline is the reference of: one
// assertScreenshot of one case, on one device and environment, for one
// owner — the executor whose runs record and compare against it (what a
// run saw with their credentials is theirs).
type BaselineKey struct {
	TaskID      string `json:"taskId"`
	CaseID      string `json:"caseId"`
	Name        string `json:"name"`
	Device      string `json:"device"`
	Environment string `json:"environment"` // the origin of the task's base URL
	Owner       string `json:"owner"`
}

// Baseline is one version of the reference screenshot of a BaselineKey.
// It applies while the steps up to its assertion stay the same
// (Fingerprint), whatever the case's version.
type Baseline struct {
	ID string `json:"id"`
	BaselineKey
	CaseKey     string         `json:"caseKey"`
	CaseVersion int            `json:"caseVersion"` // the case version whose run recorded it
	Fingerprint string         `json:"fingerprint"`
	Version     int            `json:"version"` // 1, 2, ... per key
	Status      BaselineStatus `json:"status"`
	SHA256      string         `json:"sha256"`
	Width       int            `json:"width"`
	Height      int            `json:"height"`
	RunID       string         `json:"runId"`
	ExecutionID string         `json:"executionId"`
	StepIndex   int            `json:"stepIndex"`
	// DiffRatio is the share of pixels that differed from the baseline in
	// use when this one was recorded; nil for a first baseline.
	DiffRatio *float64   `json:"diffRatio,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	DecidedBy string     `json:"decidedBy,omitempty"`
	DecidedAt *time.Time `json:"decidedAt,omitempty"`
	// Image is the PNG; loaded only where a method says so.
	Image []byte `json:"-"`
}

// BaselineFilter selects baselines.
type BaselineFilter struct {
	Owner  string // required: only the owner's baselines are listed
	TaskID string
	Status BaselineStatus
	Limit  int // 0 means 100; at most 1000
}

// BaselineStore keeps the baselines of visual comparisons.
type BaselineStore interface {
	// CreateBaseline stores b (with its Image) as the next version of its
	// key, setting ID, Version and CreatedAt: a write of the run that
	// recorded it (b.RunID, b.ExecutionID), fenced by the lease l like its
	// other writes. Returns INVALID_ARGUMENT, LEASE_LOST once the worker no
	// longer holds the run (nothing is stored).
	CreateBaseline(ctx context.Context, l Lease, b *Baseline) error
	// FindCurrentBaseline returns, with its image, the baseline a
	// comparison of key at fingerprint uses: the newest approved one, else
	// the newest first recording still pending — never a candidate
	// recorded because a screenshot differed (DiffRatio set), which is
	// compared against only once approved. Returns NOT_FOUND.
	FindCurrentBaseline(ctx context.Context, key BaselineKey, fingerprint string) (*Baseline, error)
	// FindBaseline returns baseline id with its image if owner owns it.
	// Returns NOT_FOUND (also for another's).
	FindBaseline(ctx context.Context, owner, id string) (*Baseline, error)
	// FindBaselines returns the filter's baselines, newest first, without
	// images.
	FindBaselines(ctx context.Context, f BaselineFilter) ([]*Baseline, error)
	// DecideBaseline approves or rejects owner's pending baseline id,
	// recording who and when. Returns NOT_FOUND, CONFLICT (not pending),
	// INVALID_ARGUMENT (another status).
	DecideBaseline(ctx context.Context, owner, id string, status BaselineStatus) (*Baseline, error)
}

// Metric is one page-speed value a run measured (assertPerformance).
type Metric struct {
	RunID       string    `json:"runId"`
	ExecutionID string    `json:"executionId"`
	TaskID      string    `json:"taskId"`
	CaseKey     string    `json:"caseKey"`
	StepIndex   int       `json:"stepIndex"`
	Name        string    `json:"name"` // lcp, fcp, cls, ttfb, inp, load, domContentLoaded
	Value       float64   `json:"value"`
	CreatedAt   time.Time `json:"createdAt"`
}

// MetricStore keeps the page-speed values of runs.
type MetricStore interface {
	// SaveMetrics stores the values of executions of the run l fences
	// (replacing those of the same execution, step and name). Returns
	// LEASE_LOST once the worker no longer holds the run.
	SaveMetrics(ctx context.Context, l Lease, ms []*Metric) error
	// FindMetrics returns the values measured by the runs, in run order.
	FindMetrics(ctx context.Context, runIDs []string) ([]*Metric, error)
}

// AccessibilityResult is what an accessibility check (assertAccessible)
// found on a page, as axe-core reports it.
type AccessibilityResult struct {
	Engine     string         `json:"engine"` // "axe-core 4.14.1"
	URL        string         `json:"url"`
	Violations []AxeViolation `json:"violations"`
	// Incomplete counts the rules axe-core could not decide (to review by
	// hand); Passes the rules that passed.
	Incomplete int `json:"incomplete"`
	Passes     int `json:"passes"`
}

// AxeViolation is one rule a page breaks.
type AxeViolation struct {
	ID          string    `json:"id"`
	Impact      string    `json:"impact"` // minor, moderate, serious, critical
	Description string    `json:"description"`
	Help        string    `json:"help"`
	HelpURL     string    `json:"helpUrl"`
	Tags        []string  `json:"tags"`
	Nodes       []AxeNode `json:"nodes"`
}

// AxeNode is one element that breaks a rule.
type AxeNode struct {
	Target         []string `json:"target"` // its CSS selector
	HTML           string   `json:"html"`
	Impact         string   `json:"impact"`
	FailureSummary string   `json:"failureSummary"`
}
