DROP TABLE audit_details;
