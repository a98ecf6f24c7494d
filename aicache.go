package duet

import (
	"context"
	"time"
)

// AIAction is one action an acting AI step (ai, aiTap, aiFill) resolved
// to: what it did and the element it did it to, by the most robust
// locator that found exactly that element (role and accessible name
// first, then text, then test id, CSS last).
type AIAction struct {
	// Do is click, fill, select, check, uncheck, press or hover.
	Do      string   `json:"do"`
	Locator *Locator `json:"locator"`
	// Value is what fill types, select picks or press presses; an aiFill
	// keeps none (its value is the step's, rendered at each run).
	Value string `json:"value,omitempty"`
	// Region is the fingerprint of the page region the element was in
	// when the action ran: the elements a person acts on around it, by
	// role and name, digits aside.
	Region string `json:"region"`
}

// AIPlanKey names the plans of one step of one version of a case.
type AIPlanKey struct {
	TaskID      string `json:"taskId"`
	CaseID      string `json:"caseId"`
	CaseVersion int    `json:"caseVersion"`
	StepIndex   int    `json:"stepIndex"`
}

// AIPlan is what a model decided for one acting AI step, once the step's
// goal was verified: the actions, replayed on the next run without a model
// call while their locators resolve and their page regions match. A
// changed prompt (StepHash) or case version misses.
type AIPlan struct {
	ID string `json:"id"`
	AIPlanKey
	// StepHash identifies the step as compiled (kind, prompt, value).
	StepHash string `json:"stepHash"`
	// Fingerprint is the Region of the first action: where the plan
	// starts. A step keeps one plan per fingerprint.
	Fingerprint string     `json:"fingerprint"`
	Actions     []AIAction `json:"actions"`
	// RunID and ExecutionID are the run that verified the plan; CreatedBy
	// its executor.
	RunID       string    `json:"runId"`
	ExecutionID string    `json:"executionId"`
	CreatedBy   string    `json:"createdBy"`
	Hits        int       `json:"hits"`
	CreatedAt   time.Time `json:"createdAt"`
	UsedAt      time.Time `json:"usedAt"`
}

// MaxAIPlanActions bounds the actions of a plan.
const MaxAIPlanActions = 64

// MaxAIPlansPerStep bounds the plans (one per fingerprint) a step keeps:
// past it, the least recently used goes.
const MaxAIPlansPerStep = 8

// AICacheStore keeps the plans of acting AI steps, shared by every worker
// and instance. Writes come only from the worker that holds a run (its
// lease); reads for people follow the case's visibility.
type AICacheStore interface {
	// SaveAIPlan stores p under the lease l of its run (p.RunID), replacing
	// the plan of the same key, step hash and fingerprint; past
	// MaxAIPlansPerStep, the least recently used plan of the step goes.
	// Sets ID and CreatedAt. Returns LEASE_LOST once the worker no longer
	// holds the run, INVALID_ARGUMENT.
	SaveAIPlan(ctx context.Context, l Lease, p *AIPlan) error
	// FindAIPlans returns the plans of key with stepHash, most recently
	// used first (for the worker that runs the step).
	FindAIPlans(ctx context.Context, key AIPlanKey, stepHash string) ([]*AIPlan, error)
	// UseAIPlan counts a replay of plan id under the lease l. Returns
	// LEASE_LOST.
	UseAIPlan(ctx context.Context, l Lease, id string) error
	// FindCaseAIPlans returns the plans of every version of case caseID
	// if viewer may see the case, by version and step. Returns NOT_FOUND.
	FindCaseAIPlans(ctx context.Context, viewer, caseID string) ([]*AIPlan, error)
	// ClearAIPlans removes the plans of task taskID (of its case caseID
	// only, when not "") if owner owns the task, and returns how many.
	// Returns NOT_FOUND (also for another's task).
	ClearAIPlans(ctx context.Context, owner, taskID, caseID string) (int, error)
}
