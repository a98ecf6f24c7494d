-- +goose Up
-- Every invocation record updated six b-trees. Two of its indexes overlap:
-- (executor, time) and (executor, id). Every list of invocation records is
-- read newest first (ORDER BY id DESC LIMIT n), and (executor, id) gives an
-- executor's records in that order and stops at the limit, whatever time
-- bounds the list also has; (executor, time) found a time window but then
-- sorted every record in it, and for `before` paging (time < t) that was
-- the executor's whole history. Neither engine's planner picks it for any
-- list Duet makes (checked with EXPLAIN on both), so it goes: one b-tree
-- less to update per call.
DROP INDEX mcp_invocations_executor;

-- +goose Down
CREATE INDEX mcp_invocations_executor ON mcp_invocations (executor, time);
