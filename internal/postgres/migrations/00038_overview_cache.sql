-- +goose Up
-- SQLite's 00038 adds triggers that keep its read cache of a task's
-- overview (contract alerts, schedules) fresh. This engine has no read cache
-- — it reads the whole overview in one statement, on the server every
-- instance shares — and needs no change: this migration only keeps the two
-- engines' migrations numbered alike.
SELECT 1;

-- +goose Down
SELECT 1;
