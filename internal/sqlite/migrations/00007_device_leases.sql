-- +goose Up
-- Device leases: a phone (android:SERIAL) is held by one execution at a time
-- across every process on this database. The holder renews its lease while
-- it uses the device; a lease that expires (its worker crashed) frees the
-- device. Times are Unix microseconds, like every other table.
CREATE TABLE device_leases (
    device      TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    owner       TEXT NOT NULL DEFAULT '',
    acquired_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
