-- Teams: groups of members sharing custom roles, by a key unique in the account. `custom_roles`
-- holds the roles' keys each between newlines ("\nops\nstaging\n"; empty for none), as
-- members.custom_roles does, so that "who gives role k" is a match of "\nk\n"; `search` is the
-- lower-cased key and name a `query` filter matches, `sort_name` the lower-cased name.
CREATE TABLE teams (
    key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    custom_roles TEXT NOT NULL,
    sort_name TEXT NOT NULL,
    search TEXT NOT NULL,
    creation_date BIGINT NOT NULL,
    last_modified BIGINT NOT NULL,
    version BIGINT NOT NULL
);
CREATE INDEX teams_name ON teams (sort_name, key);

-- Who belongs to which team. Both sides cascade: a deleted member leaves its teams, a deleted
-- team's members leave it; a member added while it is deleted fails its foreign key (the
-- writer's unit of work runs again and finds it gone).
CREATE TABLE team_members (
    team_key TEXT NOT NULL REFERENCES teams (key) ON DELETE CASCADE,
    member_id TEXT NOT NULL REFERENCES members (id) ON DELETE CASCADE,
    PRIMARY KEY (team_key, member_id)
);
CREATE INDEX team_members_member ON team_members (member_id, team_key);
