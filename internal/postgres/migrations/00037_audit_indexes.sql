-- +goose Up
-- The audit trail is read newest first (ORDER BY id DESC): a caller's
-- from audit_caller_id (caller, id), one trace's from audit_trace, all of
-- it from the primary key, with an optional time window that the ids,
-- drawn in insertion order, follow (TestAuditReadsUseTheirIndexes). No read
-- needs an index on the time: audit_time and audit_caller (caller, time)
-- only cost every insert their pages — 35 to 45 % of the backend's CPU for
-- the audit writer's batch of 64 records (docs/performance.md, issue 32).
DROP INDEX audit_time;
DROP INDEX audit_caller;

-- +goose Down
CREATE INDEX audit_caller ON audit (caller, time);
CREATE INDEX audit_time ON audit (time);
