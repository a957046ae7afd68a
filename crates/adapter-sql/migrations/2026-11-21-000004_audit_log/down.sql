DROP TABLE audit_resources;
DROP TABLE audit_log;
