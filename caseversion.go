package duet

import (
	"context"
	"time"
)

// CaseSaveVia says how a version of a case was saved.
type CaseSaveVia string

// How a case version was saved.
const (
	// SavedByApply: a suite applied (duet apply, the console's apply
	// form or suite editor, createOrUpdateTasks).
	SavedByApply CaseSaveVia = "apply"
	// SavedByRecorder: the case the console's recorder saved (its owner's
	// save goes through the apply path, one case).
	SavedByRecorder CaseSaveVia = "recorder"
	// SavedAsDraft: a draft (the agent's, a healed step's, a sharee's
	// recording).
	SavedAsDraft CaseSaveVia = "draft"
	// SavedBefore: the version a case had when Duet began keeping case
	// versions (migration 00036): how it was saved is not known.
	SavedBefore CaseSaveVia = "before"
)

// CaseVersion is one saved version of a case: every save that changes a
// case (Case.Version increases) keeps its source here, in the save's
// transaction, so that two versions can be compared.
type CaseVersion struct {
	CaseID     string      `json:"caseId"`
	Version    int         `json:"version"`
	Title      string      `json:"title"`
	Source     string      `json:"source,omitempty"` // the case's YAML at this version (not in a list of versions)
	SourceHash string      `json:"sourceHash"`
	SavedBy    string      `json:"savedBy"` // who wrote this version (the case's CreatedBy then)
	SavedAt    time.Time   `json:"savedAt"`
	Via        CaseSaveVia `json:"via"`
}

// CaseVersionStore keeps the versions of cases. Its reads check no
// access: the caller checks the viewer may see the case first.
type CaseVersionStore interface {
	// FindCaseVersions returns up to limit versions of the case, newest
	// first, below version before (0: from the newest), without their
	// Source; and whether there are more.
	FindCaseVersions(ctx context.Context, caseID string, before, limit int) (versions []*CaseVersion, more bool, err error)
	// FindCaseVersion returns one version of the case with its source.
	// Returns NOT_FOUND.
	FindCaseVersion(ctx context.Context, caseID string, version int) (*CaseVersion, error)
}
