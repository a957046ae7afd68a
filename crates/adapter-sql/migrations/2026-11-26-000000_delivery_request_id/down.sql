ALTER TABLE webhook_deliveries DROP COLUMN request_id;
