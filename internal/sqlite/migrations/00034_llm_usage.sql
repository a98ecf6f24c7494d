-- +goose Up
-- The tokens each user's AI steps spent per UTC day (DUET_LLM_USER_DAY_TOKENS;
-- docs/ai-steps.md, issue 29), shared by every worker and instance: a model
-- call reserves its tokens here first, in one conditional upsert, and the
-- difference with what it spent is settled after.
CREATE TABLE llm_usage (
    user_id    TEXT NOT NULL,
    day        TEXT NOT NULL,
    tokens     INTEGER NOT NULL DEFAULT 0,
    calls      INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, day)
);

-- +goose Down
DROP TABLE llm_usage;
