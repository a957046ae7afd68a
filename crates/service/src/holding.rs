//! What members and teams refer to (teams, custom roles), held until the transaction ends, in
//! the order every writer locks them (members, teams, roles).

use domain::key::{CustomRoleKey, TeamKey};
use domain::team::Team;
use ports::{Locked, Repository};

use crate::ServiceResult;

/// Locks the teams `keys` name (each once, in key order). The first key naming no team, if any.
pub(crate) fn hold_teams(
    repo: &mut dyn Repository,
    keys: &[String],
) -> ServiceResult<Result<Vec<Locked<Team>>, String>> {
    let lookups: Vec<TeamKey> = keys.iter().map(|k| TeamKey::lookup(k)).collect();
    let refs: Vec<&TeamKey> = lookups.iter().collect();
    let teams = repo.lock_teams(&refs)?;
    Ok(
        match keys.iter().find(|k| !teams.iter().any(|t| t.key == **k)) {
            Some(missing) => Err(missing.clone()),
            None => Ok(teams),
        },
    )
}

/// Locks the custom roles `keys` name until the transaction ends (each once, in key order, so
/// two transactions cannot deadlock): none can be deleted while it is being given, and a role
/// deleted meanwhile is not given. The first key that names no custom role, if any.
pub(crate) fn hold_custom_roles(
    repo: &mut dyn Repository,
    keys: &[String],
) -> ServiceResult<Option<String>> {
    let mut sorted: Vec<&String> = keys.iter().collect();
    sorted.sort();
    sorted.dedup();
    for key in sorted {
        if repo
            .lock_custom_role(&CustomRoleKey::lookup(key))?
            .is_none()
        {
            return Ok(Some(key.clone()));
        }
    }
    Ok(None)
}
