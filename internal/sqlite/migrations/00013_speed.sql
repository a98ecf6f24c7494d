-- +goose Up
-- The read cache's epoch (cache.go): one counter that every change to a
-- table the cached reads depend on (tokens, tasks and their shares, teams
-- and their members, cases, runs and their executions) increments, by
-- trigger, whoever writes — this process, another `duet` on the same file, or
-- a hand-written statement. A cached read is served only while the counter
-- is where it was when the value was read, so a revoked token or an unshared
-- task takes effect at the next request.
CREATE TABLE cache_epoch (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO cache_epoch (id, n) VALUES (1, 0);

-- Lists that do not grow with the store: a task list is read in id order
-- among the tasks a viewer owns, so (owner, id) serves both.
CREATE INDEX tasks_owner_id ON tasks (owner, id);
-- A caller's audit trail and an executor's invocations, newest first: the
-- filter and the order from one index, whatever else the tables hold.
CREATE INDEX audit_caller_id ON audit (caller, id);
CREATE INDEX mcp_invocations_executor_id ON mcp_invocations (executor, id);

-- +goose StatementBegin
CREATE TRIGGER cache_epoch_tokens_insert AFTER INSERT ON tokens BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_tokens_update AFTER UPDATE ON tokens BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_tokens_delete AFTER DELETE ON tokens BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_tasks_insert AFTER INSERT ON tasks BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_tasks_update AFTER UPDATE ON tasks BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_tasks_delete AFTER DELETE ON tasks BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_task_shares_insert AFTER INSERT ON task_shares BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_task_shares_update AFTER UPDATE ON task_shares BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_task_shares_delete AFTER DELETE ON task_shares BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_teams_insert AFTER INSERT ON teams BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_teams_update AFTER UPDATE ON teams BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_teams_delete AFTER DELETE ON teams BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_team_members_insert AFTER INSERT ON team_members BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_team_members_update AFTER UPDATE ON team_members BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_team_members_delete AFTER DELETE ON team_members BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_cases_insert AFTER INSERT ON cases BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_cases_update AFTER UPDATE ON cases BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_cases_delete AFTER DELETE ON cases BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_runs_insert AFTER INSERT ON runs BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_runs_update AFTER UPDATE ON runs BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_runs_delete AFTER DELETE ON runs BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_executions_insert AFTER INSERT ON executions BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_executions_update AFTER UPDATE ON executions BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_executions_delete AFTER DELETE ON executions BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER cache_epoch_tokens_insert;
DROP TRIGGER cache_epoch_tokens_update;
DROP TRIGGER cache_epoch_tokens_delete;
DROP TRIGGER cache_epoch_tasks_insert;
DROP TRIGGER cache_epoch_tasks_update;
DROP TRIGGER cache_epoch_tasks_delete;
DROP TRIGGER cache_epoch_task_shares_insert;
DROP TRIGGER cache_epoch_task_shares_update;
DROP TRIGGER cache_epoch_task_shares_delete;
DROP TRIGGER cache_epoch_teams_insert;
DROP TRIGGER cache_epoch_teams_update;
DROP TRIGGER cache_epoch_teams_delete;
DROP TRIGGER cache_epoch_team_members_insert;
DROP TRIGGER cache_epoch_team_members_update;
DROP TRIGGER cache_epoch_team_members_delete;
DROP TRIGGER cache_epoch_cases_insert;
DROP TRIGGER cache_epoch_cases_update;
DROP TRIGGER cache_epoch_cases_delete;
DROP TRIGGER cache_epoch_runs_insert;
DROP TRIGGER cache_epoch_runs_update;
DROP TRIGGER cache_epoch_runs_delete;
DROP TRIGGER cache_epoch_executions_insert;
DROP TRIGGER cache_epoch_executions_update;
DROP TRIGGER cache_epoch_executions_delete;
DROP TABLE cache_epoch;
DROP INDEX mcp_invocations_executor_id;
DROP INDEX audit_caller_id;
DROP INDEX tasks_owner_id;
