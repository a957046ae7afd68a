//! The rows of a flag and of its configurations, as diesel reads and writes them.

use super::*;

// `treat_none_as_null`: a `maintainerId` removed by a patch clears the column (the
// `maintainerId` filter reads it); without it diesel left the column out of the `UPDATE` (SQLite;
// PostgreSQL writes the row with `UpdateFlagRowsAndConfigs`, every column always).
#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = flags, treat_none_as_null = true)]
pub(super) struct FlagRow {
    pub(super) project_id: String,
    pub(super) key: String,
    pub(super) name: String,
    pub(super) search: String,
    pub(super) version: i64,
    pub(super) creation_date: i64,
    pub(super) archived: bool,
    pub(super) deprecated: bool,
    pub(super) temporary: bool,
    pub(super) maintainer_id: Option<String>,
    pub(super) default_on: i32,
    pub(super) default_off: i32,
    pub(super) settings: String,
}

impl FlagRow {
    pub(super) fn from_flag(project_id: &str, flag: &Flag) -> StoreResult<Self> {
        Ok(Self {
            project_id: project_id.to_owned(),
            key: flag.key.to_string(),
            name: flag.name.clone(),
            search: search_text(&flag.key, &flag.name),
            version: flag.version,
            creation_date: flag.creation_date,
            archived: flag.archived,
            deprecated: flag.deprecated,
            temporary: flag.temporary,
            maintainer_id: flag.maintainer_id.clone(),
            default_on: index_i32(flag.defaults.on_variation),
            default_off: index_i32(flag.defaults.off_variation),
            settings: stored::flag::settings_json(flag)?,
        })
    }

    pub(super) fn into_flag(self) -> StoreResult<Flag> {
        stored::flag::read_settings(&self.settings)
    }
}

#[derive(Insertable)]
#[diesel(table_name = flag_configs)]
pub(super) struct FlagConfigRow {
    pub(super) project_id: String,
    pub(super) flag_key: String,
    pub(super) environment_key: String,
    pub(super) config: String,
}
