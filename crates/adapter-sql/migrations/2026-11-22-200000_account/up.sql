-- The account this deployment serves: at most one row (slot 1). Its 24-hex `_id` is made by the
-- service the first time it starts (audit entries carry it as `_accountId`, and
-- `GET /caller-identity` as `accountId`); it never changes.
CREATE TABLE account (
    slot INTEGER PRIMARY KEY CHECK (slot = 1),
    id TEXT NOT NULL
);
