DROP TABLE custom_roles;
