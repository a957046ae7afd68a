CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    creation_date BIGINT NOT NULL,
    -- the webhook as JSON (secret included: it signs deliveries)
    doc TEXT NOT NULL
);

-- The outbox: a delivery is queued in the transaction of the change it reports, and sent after
-- commit by a worker; `next_attempt_at` both schedules retries and leases claimed rows.
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    entry_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    -- pending | delivered | failed
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id);

CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    webhook_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    date BIGINT NOT NULL,
    status_code INTEGER,
    error TEXT,
    duration_ms BIGINT NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);
CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, date);
