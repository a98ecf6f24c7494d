-- +goose Up
-- (mirrors SQLite's 00023) Loop budgets (docs/governance.md). Runs one user
-- started in the last minute are counted on every start, on any instance:
-- (triggered_by, created_at) finds them without reading the user's history.
CREATE INDEX runs_executor_created ON runs (triggered_by, created_at);
-- call_depth is how many Duet calls deep the request that started the run
-- was (its Duet-Call-Depth header; 0 for a person's request). The run's own
-- outgoing MCP calls and http steps carry call_depth + 1.
ALTER TABLE runs ADD COLUMN call_depth INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN call_depth;
DROP INDEX runs_executor_created;
