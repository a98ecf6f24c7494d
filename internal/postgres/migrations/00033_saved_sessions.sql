-- +goose Up
-- The browser sessions a run's cases save (saveSession) for its later
-- cases (session: NAME): cookies and localStorage, sealed with AES-256-GCM
-- under the master key, bound to the run, its executor and the name; kept
-- for the run only, and deleted once expired.
CREATE TABLE saved_sessions (
    run_id     TEXT COLLATE "C" NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    owner      TEXT COLLATE "C" NOT NULL,
    ciphertext BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE INDEX saved_sessions_expiry ON saved_sessions (expires_at);

-- +goose Down
DROP TABLE saved_sessions;
