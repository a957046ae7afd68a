//! `_access`: what the caller may do to the resource an answer shows, as the reference's
//! `Access {allowed, denied}` (each action of the resource's kind with the statement that
//! decided). It depends on the caller, so it is added to an answer when it is made for one
//! (single projects, environments, segments, webhooks, custom roles and teams; a flag's
//! configurations when a GET of the flag asks with `expand=_access`), never to what the audit
//! log records or the read cache keeps.

use std::collections::BTreeMap;

use domain::policy::actions::ResourceKind;
use domain::policy::Resource;
use serde::Serialize;
use serde_json::Value;
use service::Caller;

use crate::error::ApiError;

/// What the caller may do to a resource.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ResourceAccess {
    /// The actions the caller may do to it.
    pub allowed: Vec<ActionAccess>,
    /// The actions it may not.
    pub denied: Vec<ActionAccess>,
}

/// One action of a [`ResourceAccess`].
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ActionAccess {
    /// The action (see `docs/roles.md`).
    pub action: String,
    /// The statement that decided, with its role; for an action no statement allows, or one
    /// that needs the `admin` base role the caller lacks, only its effect (`deny`).
    pub reason: AccessReason,
}

/// The statement that decided, and the role it is in.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessReason {
    /// `allow` or `deny`.
    pub effect: domain::policy::Effect,
    /// Resource specifiers it covers (or `notResources`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub resources: Option<Vec<String>>,
    /// Resource specifiers it covers all but.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub not_resources: Option<Vec<String>>,
    /// Actions it covers (all when neither list is given).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub actions: Option<Vec<String>>,
    /// Actions it covers all but.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub not_actions: Option<Vec<String>>,
    /// The role's key (a built-in role's name; `inline` for a token's inline role); absent when
    /// no statement decided.
    #[serde(rename = "role_name", skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub role_name: Option<String>,
}

impl From<&service::Access> for ResourceAccess {
    fn from(access: &service::Access) -> Self {
        // What no statement decided is refused (or, never in practice, allowed) as such.
        let actions = |list: &[service::ActionAccess], undecided: domain::policy::Effect| {
            list.iter()
                .map(|a| ActionAccess {
                    action: a.action.to_owned(),
                    reason: a.reason.as_ref().map_or(
                        AccessReason {
                            effect: undecided,
                            resources: None,
                            not_resources: None,
                            actions: None,
                            not_actions: None,
                            role_name: None,
                        },
                        |r| AccessReason {
                            effect: r.statement.effect,
                            resources: r.statement.resources.clone(),
                            not_resources: r.statement.not_resources.clone(),
                            actions: r.statement.actions.clone(),
                            not_actions: r.statement.not_actions.clone(),
                            role_name: Some(r.role_name.clone()),
                        },
                    ),
                })
                .collect()
        };
        use domain::policy::Effect;
        Self {
            allowed: actions(&access.allowed, Effect::Allow),
            denied: actions(&access.denied, Effect::Deny),
        }
    }
}

/// `shown` as JSON with the caller's `_access` to it.
///
/// # Errors
/// 500 when `shown` does not serialise (a bug).
pub fn with_access<T: Serialize>(shown: &T, access: &service::Access) -> Result<Value, ApiError> {
    let mut value = serde_json::to_value(shown).map_err(|e| ApiError::unserializable(&e))?;
    let access = serde_json::to_value(ResourceAccess::from(access))
        .map_err(|e| ApiError::unserializable(&e))?;
    if let Some(object) = value.as_object_mut() {
        object.insert("_access".into(), access);
    }
    Ok(value)
}

/// The most bytes of `_access` the answer of one flag carries (`expand=_access`): each entry
/// carries its statement whole, up to 32 KiB, for each of some 25 flag actions in each of up to
/// 100 environments.
pub const MAX_FLAG_ACCESS_BYTES: usize = 1 << 20;

/// The caller's `_access` to `flag` (of project `project_key`) in each environment of `shown`,
/// as JSON by environment key, as its requests are decided ([`service::Caller::flag_access`]).
///
/// # Errors
/// 400 when it would pass [`MAX_FLAG_ACCESS_BYTES`] (fewer environments can be named with
/// `env`); 500 when it cannot be serialised.
pub fn to_flag_environments(
    caller: &Caller,
    project_key: &str,
    flag: &domain::flag::Flag,
    shown: &[&str],
) -> Result<BTreeMap<String, Value>, ApiError> {
    let mut accesses = BTreeMap::new();
    let mut bytes = ByteCount(0);
    caller.flag_access(project_key, flag, shown, |env, access| {
        let access = ResourceAccess::from(&access);
        serde_json::to_writer(&mut bytes, &access).map_err(|e| ApiError::unserializable(&e))?;
        if bytes.0 > MAX_FLAG_ACCESS_BYTES {
            return Err(ApiError::invalid(format!(
                "the caller's _access to this flag in its {} environments would take more \
                 than {MAX_FLAG_ACCESS_BYTES} bytes (its roles' statements are large): name \
                 fewer environments with env",
                shown.len()
            )));
        }
        let access = serde_json::to_value(&access).map_err(|e| ApiError::unserializable(&e))?;
        accesses.insert(env.to_owned(), access);
        Ok(())
    })?;
    Ok(accesses)
}

/// `shown` (a flag's answer) as JSON with `accesses` (by environment key, from
/// [`to_flag_environments`]) as the `_access` of its environments' configurations.
///
/// # Errors
/// 500 when `shown` cannot be serialised.
pub fn with_flag_access<T: Serialize>(
    shown: &T,
    mut accesses: BTreeMap<String, Value>,
) -> Result<Value, ApiError> {
    let mut value = serde_json::to_value(shown).map_err(|e| ApiError::unserializable(&e))?;
    if let Some(environments) = value.get_mut("environments").and_then(Value::as_object_mut) {
        for (env, config) in environments.iter_mut() {
            if let (Some(config), Some(access)) = (config.as_object_mut(), accesses.remove(env)) {
                config.insert("_access".into(), access);
            }
        }
    }
    Ok(value)
}

/// Counts what is written to it.
#[derive(Debug)]
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The caller's access to a project.
pub fn to_project(caller: &Caller, project: &domain::project::Project) -> service::Access {
    let resource = Resource::project(&project.key).with_tags(&project.tags);
    caller.access_to(ResourceKind::Project, &resource)
}

/// The caller's access to an environment of project `project_key`.
pub fn to_environment(
    caller: &Caller,
    project_key: &str,
    env: &domain::environment::Environment,
) -> service::Access {
    let resource = Resource::project(project_key)
        .environment(&env.key)
        .with_tags(&env.tags);
    caller.access_to(ResourceKind::Environment, &resource)
}

/// The caller's access to a segment of environment `env_key` of project `project_key`.
pub fn to_segment(
    caller: &Caller,
    project_key: &str,
    env_key: &str,
    segment: &domain::segment::Segment,
) -> service::Access {
    let resource = Resource::project(project_key)
        .environment(env_key)
        .segment(&segment.key)
        .with_tags(&segment.tags);
    caller.access_to(ResourceKind::Segment, &resource)
}

/// The caller's access to a webhook.
pub fn to_webhook(caller: &Caller, webhook: &domain::webhook::Webhook) -> service::Access {
    let resource = Resource::webhook(&webhook.id).with_tags(&webhook.tags);
    caller.access_to(ResourceKind::Webhook, &resource)
}

/// The caller's access to a custom role.
pub fn to_role(caller: &Caller, role: &domain::custom_role::CustomRole) -> service::Access {
    caller.access_to(ResourceKind::Role, &Resource::role(&role.key))
}

/// The caller's access to a team.
pub fn to_team(caller: &Caller, team: &domain::team::Team) -> service::Access {
    caller.access_to(ResourceKind::Team, &Resource::team(&team.key))
}
