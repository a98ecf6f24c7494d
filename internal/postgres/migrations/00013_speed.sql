-- +goose Up
-- Lists that do not grow with the store: a task list is read in id order
-- among the tasks a viewer owns, so (owner, id) serves both the filter and
-- the order. (SQLite's 00013 also adds the read cache's epoch counter; this
-- engine has no read cache: every instance reads the server, so a revoked
-- token or an unshared task takes effect at once on all of them.)
CREATE INDEX tasks_owner_id ON tasks (owner, id);
-- A caller's audit trail and an executor's invocations, newest first: the
-- filter and the order from one index, whatever else the tables hold.
CREATE INDEX audit_caller_id ON audit (caller, id);
CREATE INDEX mcp_invocations_executor_id ON mcp_invocations (executor, id);

-- +goose Down
DROP INDEX mcp_invocations_executor_id;
DROP INDEX audit_caller_id;
DROP INDEX tasks_owner_id;
