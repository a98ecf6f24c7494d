-- +goose Up
-- An executor's approval of a case version someone else wrote is bound to
-- the places that version could send data to when it was shown to them
-- (duet.Destinations: the task's base-URL host, the hosts of its open and
-- http steps, the MCP tools it calls, the task's post-run actions). A run
-- whose destinations hash differs (the owner changed the base URL, say)
-- needs a new approval. Approvals given before this column existed hold
-- nothing: they were given under the rule that let read-only calls run
-- unapproved, and showed no destinations.
ALTER TABLE case_approvals ADD COLUMN destinations_hash TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE case_approvals DROP COLUMN destinations_hash;
