-- The id of the request whose change queued the delivery (its `X-Request-Id`), so that the
-- delivery worker's log and the receiver (`X-Svc-Request-Id`) can name it. Deliveries queued
-- before, or by changes made outside a request, have none.
ALTER TABLE webhook_deliveries ADD COLUMN request_id TEXT;
