DROP TABLE team_members;
DROP TABLE teams;
