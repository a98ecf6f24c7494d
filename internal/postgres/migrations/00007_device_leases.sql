-- +goose Up
-- Device leases (mirrors SQLite's 00007): a phone (android:SERIAL) is held by
-- one execution at a time across every process on this database; a lease
-- that expires (its worker crashed) frees the device.
CREATE TABLE device_leases (
    device      TEXT COLLATE "C" PRIMARY KEY,
    holder      TEXT COLLATE "C" NOT NULL,
    owner       TEXT COLLATE "C" NOT NULL DEFAULT '',
    acquired_at TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
