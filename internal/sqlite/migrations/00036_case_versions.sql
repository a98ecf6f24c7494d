-- +goose Up
-- Every saved version of a case (duet.CaseVersion), written in the save's
-- transaction (ApplySuite, SaveDraftCase): the case page compares two.
-- Each case's current version is kept as the first one known ('before':
-- how it was saved is not known).
CREATE TABLE case_versions (
    case_id     TEXT NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    title       TEXT NOT NULL,
    source      TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    saved_by    TEXT NOT NULL,
    saved_at    INTEGER NOT NULL,
    via         TEXT NOT NULL,
    PRIMARY KEY (case_id, version)
);

INSERT INTO case_versions (case_id, version, title, source, source_hash, saved_by, saved_at, via)
    SELECT id, version, title, source, source_hash, created_by, updated_at, 'before' FROM cases;

-- +goose Down
DROP TABLE case_versions;
