DROP INDEX flags_project_state;
DROP INDEX flags_project_maintainer;
DROP TABLE flag_prerequisites;
