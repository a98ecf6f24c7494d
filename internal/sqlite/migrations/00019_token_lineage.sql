-- +goose Up
-- Token lineage (issue 25, point 5): a token created by a request that
-- authenticated with another token is its child. It expires no later than
-- its parent (checked when it is created), and deleting (revoking) the
-- parent deletes it, transitively.
ALTER TABLE tokens ADD COLUMN parent_id TEXT REFERENCES tokens (id) ON DELETE CASCADE;
CREATE INDEX tokens_parent ON tokens (parent_id);

-- +goose Down
DROP INDEX tokens_parent;
ALTER TABLE tokens DROP COLUMN parent_id;
