-- +goose Up
-- The read cache (cache.go) also keeps the rest of a task's overview
-- (get_test_task): its contract alerts and its schedules, as its viewer sees
-- them. Any change to either — an alert saved or cleared, a schedule made,
-- changed, fired or removed, by this process, another `duet` on the same
-- file or a hand-written statement — moves the same counter as 00013's
-- triggers, so the next overview reads them afresh. What else they depend on
-- (tasks, shares, teams, cases) already moves it.
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_contract_alerts_insert AFTER INSERT ON contract_alerts BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_contract_alerts_update AFTER UPDATE ON contract_alerts BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_contract_alerts_delete AFTER DELETE ON contract_alerts BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_schedules_insert AFTER INSERT ON schedules BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_schedules_update AFTER UPDATE ON schedules BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_schedules_delete AFTER DELETE ON schedules BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER cache_epoch_contract_alerts_insert;
DROP TRIGGER cache_epoch_contract_alerts_update;
DROP TRIGGER cache_epoch_contract_alerts_delete;
DROP TRIGGER cache_epoch_schedules_insert;
DROP TRIGGER cache_epoch_schedules_update;
DROP TRIGGER cache_epoch_schedules_delete;
