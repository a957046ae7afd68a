//! Policies: statements allowing or denying actions on resources, and the one function that
//! decides a request by them ([`decide`]).
//!
//! A statement names resources by *specifier* (`proj/shop:env/production:flag/*`: parts
//! `kind/name` joined by `:`, `*` globs in names, `;tag,tag` qualifiers that the resource must
//! carry all of) and actions by their camelCase names (`updateOn`, `createFlag`, `update*`),
//! the vocabulary of the audit log's `accesses` ([`actions`] lists them). Deny wins over allow,
//! and what no statement allows is denied.
//!
//! ```
//! use domain::policy::{decide, Policy, Resource, Statement};
//! let staging_only = Policy::new("staging-toggler", vec![
//!     Statement::allow(&["proj/shop:env/staging:flag/*"], &["updateOn"]),
//! ]);
//! let staging = Resource::project("shop").environment("staging").flag("checkout");
//! let production = Resource::project("shop").environment("production").flag("checkout");
//! assert!(decide(&[staging_only.clone()], "updateOn", &staging).is_allowed());
//! assert!(!decide(&[staging_only], "updateOn", &production).is_allowed());
//! ```

use serde::{Deserialize, Serialize};

use crate::audit::glob;
use crate::role::Role;
use crate::FieldError;

pub mod actions;
mod inclusion;
mod resource;
mod specifier;

pub use inclusion::includes;
pub use resource::{Request, Resource};
pub use specifier::{
    check_shape, check_specifier, ACTION_PATTERN, MAX_ACTION_CHARS, MAX_NAME_GLOBS,
    MAX_SPECIFIER_CHARS, SPECIFIER_PATTERN,
};

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Allows (or, in a webhook, selects) what it matches.
    Allow,
    /// Denies (or excludes) what it matches; wins over any allow.
    Deny,
}

/// A policy statement: resources and actions, with `*` globs.
///
/// ```
/// use domain::audit::Access;
/// use domain::policy::{Effect, Statement};
/// let production_flags = Statement {
///     effect: Effect::Allow,
///     resources: Some(vec!["proj/*:env/production:flag/*".into()]),
///     not_resources: None,
///     actions: Some(vec!["update*".into()]),
///     not_actions: None,
/// };
/// let on = Access { action: "updateOn".into(), resource: "proj/web:env/production:flag/f".into() };
/// assert!(production_flags.matches(&on));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Statement {
    /// `allow` or `deny`.
    pub effect: Effect,
    /// Resource specifiers it covers (or `notResources`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_not_null"
    )]
    pub resources: Option<Vec<String>>,
    /// Resource specifiers it covers all but.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_not_null"
    )]
    pub not_resources: Option<Vec<String>>,
    /// Actions it covers (all when neither list is given).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_not_null"
    )]
    pub actions: Option<Vec<String>>,
    /// Actions it covers all but.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_not_null"
    )]
    pub not_actions: Option<Vec<String>>,
}

/// A statement's list, when given: a list (a `null` is refused, as the API's document says;
/// leave the field out instead).
fn list_not_null<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<String>>, D::Error> {
    Vec::<String>::deserialize(deserializer).map(Some)
}

impl Statement {
    /// A statement allowing `actions` on `resources`.
    ///
    /// ```
    /// let s = domain::policy::Statement::allow(&["proj/*"], &["viewProject"]);
    /// assert_eq!(s.effect, domain::policy::Effect::Allow);
    /// ```
    pub fn allow(resources: &[&str], actions: &[&str]) -> Self {
        Self::with(Effect::Allow, resources, actions)
    }

    /// A statement denying `actions` on `resources`.
    ///
    /// ```
    /// let s = domain::policy::Statement::deny(&["proj/*:env/production:flag/*"], &["*"]);
    /// assert_eq!(s.effect, domain::policy::Effect::Deny);
    /// ```
    pub fn deny(resources: &[&str], actions: &[&str]) -> Self {
        Self::with(Effect::Deny, resources, actions)
    }

    fn with(effect: Effect, resources: &[&str], actions: &[&str]) -> Self {
        let owned = |list: &[&str]| Some(list.iter().map(|s| (*s).to_owned()).collect());
        Self {
            effect,
            resources: owned(resources),
            not_resources: None,
            actions: owned(actions),
            not_actions: None,
        }
    }

    /// Whether the statement covers `access` (an audit entry's action on a resource specifier,
    /// which carries no tags).
    pub fn matches(&self, access: &crate::audit::Access) -> bool {
        self.covers(&access.action, &Resource::from_specifier(&access.resource))
    }

    /// Whether the statement covers `action` on `resource`, whatever its effect.
    ///
    /// ```
    /// use domain::policy::{Resource, Statement};
    /// let tagged = Statement::allow(&["proj/*:env/*:flag/*;beta"], &["update*"]);
    /// let flag = Resource::project("shop").environment("test").flag("f");
    /// assert!(!tagged.covers("updateOn", &flag));
    /// assert!(tagged.covers("updateOn", &flag.with_tags(&["beta".to_owned()])));
    /// assert!(!tagged.covers("createFlag", &Resource::project("shop")));
    /// ```
    pub fn covers(&self, action: &str, resource: &Resource) -> bool {
        Compiled::of(self).covers(action, resource)
    }

    /// Checks the statement's shape: exactly one of `resources` and `notResources`, at most
    /// one of `actions` and `notActions` (what a webhook's statements need).
    pub(crate) fn validate_shape(&self, at: &str, errors: &mut Vec<FieldError>) {
        if self.resources.is_some() == self.not_resources.is_some() {
            errors.push(FieldError::new(
                at,
                "a statement has exactly one of 'resources' and 'notResources'",
            ));
        }
        if self.actions.is_some() && self.not_actions.is_some() {
            errors.push(FieldError::new(
                at,
                "a statement has at most one of 'actions' and 'notActions'",
            ));
        }
    }

    /// Checks a statement of a role or an access token: its shape, each specifier's syntax
    /// ([`check_specifier`]), and that each action names, or its glob matches, an action of
    /// the catalogue ([`actions::ALL`]), so a misspelt action is refused rather than silently
    /// matching nothing.
    ///
    /// ```
    /// use domain::policy::Statement;
    /// let mut errors = Vec::new();
    /// Statement::allow(&["proj/*:env/*:flag/*"], &["updatOn"]).validate("policy[0]", &mut errors);
    /// assert!(errors[0].reason.contains("updatOn"), "{:?}", errors[0]);
    /// ```
    pub fn validate(&self, at: &str, errors: &mut Vec<FieldError>) {
        self.validate_shape(at, errors);
        for (field, list) in [
            ("resources", &self.resources),
            ("notResources", &self.not_resources),
        ] {
            if list.as_ref().is_some_and(Vec::is_empty) {
                errors.push(FieldError::new(
                    format!("{at}.{field}"),
                    "names at least one resource specifier",
                ));
            }
            for (i, spec) in list.iter().flatten().enumerate() {
                if let Err(reason) = check_specifier(spec) {
                    errors.push(FieldError::new(format!("{at}.{field}[{i}]"), reason));
                }
            }
        }
        for (field, list) in [
            ("actions", &self.actions),
            ("notActions", &self.not_actions),
        ] {
            if list.as_ref().is_some_and(Vec::is_empty) {
                errors.push(FieldError::new(
                    format!("{at}.{field}"),
                    "names at least one action",
                ));
            }
            for (i, action) in list.iter().flatten().enumerate() {
                if action.chars().count() > MAX_ACTION_CHARS {
                    errors.push(FieldError::new(
                        format!("{at}.{field}[{i}]"),
                        format!("an action has at most {MAX_ACTION_CHARS} characters"),
                    ));
                } else if !actions::ALL.iter().any(|known| glob(action, known.name)) {
                    errors.push(FieldError::new(
                        format!("{at}.{field}[{i}]"),
                        format!("'{action}' is not an action, nor a glob matching one (see docs/roles.md)"),
                    ));
                }
            }
        }
    }
}

/// A named list of statements: a custom role's policy, a built-in role's, a team's roles', or
/// an access token's inline role.
///
/// ```
/// use domain::policy::{Policy, Statement};
/// let p = Policy::new("reader", vec![Statement::allow(&["proj/*"], &["viewProject"])]);
/// assert_eq!(p.name, "reader");
/// assert_eq!(p.statements().len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Policy {
    /// The role's key (a built-in role's name, a custom role's key, `inline` for a token's
    /// inline role): what a decision names as its reason.
    pub name: String,
    /// Its statements, in order.
    statements: Vec<Statement>,
    /// The same statements, their specifiers split into parts once, for [`decide`].
    compiled: Vec<Compiled>,
}

impl Policy {
    /// A policy named `name`.
    pub fn new(name: impl Into<String>, statements: Vec<Statement>) -> Self {
        let compiled = statements.iter().map(Compiled::of).collect();
        Self {
            name: name.into(),
            statements,
            compiled,
        }
    }

    /// Its statements, in order.
    pub fn statements(&self) -> &[Statement] {
        &self.statements
    }

    /// Whether an allow statement of the policy covers `action` on some resource of its kind
    /// (names and tags aside): what a caller needs before a use case made of such actions reads
    /// its input; the resources are decided by [`decide`] once known.
    ///
    /// ```
    /// use domain::policy::{actions, Policy, Statement};
    /// use domain::policy::actions::ResourceKind;
    /// let p = Policy::new("t", vec![Statement::allow(&["proj/shop:env/test:flag/*"], &["update*"])]);
    /// let on = actions::find("updateOn", ResourceKind::Flag).unwrap();
    /// let rename_env = actions::find("updateName", ResourceKind::Environment).unwrap();
    /// assert!(p.may_allow(on));
    /// assert!(!p.may_allow(rename_env), "no statement names environments");
    /// ```
    pub fn may_allow(&self, action: &actions::ActionInfo) -> bool {
        self.may_allow_where(action, None)
    }

    /// [`Policy::may_allow`] on a resource inside project `project` (names of the parts below
    /// it, and tags, aside): what a caller needs before a use case in that project reads its
    /// input.
    ///
    /// ```
    /// use domain::policy::{actions, Policy, Statement};
    /// use domain::policy::actions::ResourceKind;
    /// let p = Policy::new("t", vec![Statement::allow(&["proj/sh*:env/test:flag/*"], &["updateOn"])]);
    /// let on = actions::find("updateOn", ResourceKind::Flag).unwrap();
    /// assert!(p.may_allow_in(on, "shop"));
    /// assert!(!p.may_allow_in(on, "blog"));
    /// ```
    pub fn may_allow_in(&self, action: &actions::ActionInfo, project: &str) -> bool {
        self.may_allow_where(action, Some(&format!("proj/{project}")))
    }

    fn may_allow_where(&self, action: &actions::ActionInfo, project: Option<&str>) -> bool {
        let kinds: Vec<&str> = action
            .kind
            .specifier()
            .split(':')
            .map(|part| part.split('/').next().unwrap_or(part))
            .collect();
        self.statements
            .iter()
            .zip(&self.compiled)
            .any(|(statement, compiled)| {
                statement.effect == Effect::Allow
                    && compiled.covers_action(action.name)
                    && compiled.resources.as_ref().is_some_and(|(negated, specs)| {
                        *negated
                            || specs.iter().any(|spec| {
                                of_kinds(spec, &kinds)
                                    && project.is_none_or(|project| {
                                        spec.first()
                                            .is_some_and(|part| part.kind_name.matches(project))
                                    })
                            })
                    })
            })
    }
}

/// A glob, with the common case (no `*`) told apart once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Glob {
    Exact(String),
    Wild(String),
}

impl Glob {
    fn of(pattern: &str) -> Self {
        if pattern.contains('*') {
            Glob::Wild(pattern.to_owned())
        } else {
            Glob::Exact(pattern.to_owned())
        }
    }

    fn matches(&self, text: &str) -> bool {
        match self {
            Glob::Exact(exact) => exact == text,
            Glob::Wild(pattern) => glob(pattern, text),
        }
    }
}

/// One part of a specifier: its `kind/name` glob and the tags it asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CompiledPart {
    kind_name: Glob,
    tags: Vec<String>,
}

/// Whether a specifier's parts are of `kinds` (`proj`, `env`, ...), whatever their names.
fn of_kinds(spec: &[CompiledPart], kinds: &[&str]) -> bool {
    spec.len() == kinds.len()
        && spec.iter().zip(kinds).all(|(part, kind)| {
            let text = match &part.kind_name {
                Glob::Exact(text) | Glob::Wild(text) => text,
            };
            text.split('/').next() == Some(*kind)
        })
}

/// A specifier split into its parts (`kind/name` glob, `;tags`).
fn compile_specifier(spec: &str) -> Vec<CompiledPart> {
    spec.split(':')
        .map(|part| match part.split_once(';') {
            Some((kind_name, tags)) => CompiledPart {
                kind_name: Glob::of(kind_name),
                tags: tags.split(',').map(str::to_owned).collect(),
            },
            None => CompiledPart {
                kind_name: Glob::of(part),
                tags: Vec::new(),
            },
        })
        .collect()
}

/// A statement with its specifiers split into parts and its globs told apart: what
/// [`Statement::covers`] does, without reading the text again at every decision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Compiled {
    /// `(negated, specifiers)`: `resources`, or `notResources` (negated); `None` covers nothing.
    resources: Option<(bool, Vec<Vec<CompiledPart>>)>,
    /// `(negated, globs)`: `actions`, or `notActions`; `None` covers every action.
    actions: Option<(bool, Vec<Glob>)>,
}

impl Compiled {
    fn of(statement: &Statement) -> Self {
        let specifiers = |list: &[String]| list.iter().map(|s| compile_specifier(s)).collect();
        let resources = match (&statement.resources, &statement.not_resources) {
            (Some(rs), _) => Some((false, specifiers(rs))),
            (None, Some(rs)) => Some((true, specifiers(rs))),
            (None, None) => None,
        };
        let actions = match (&statement.actions, &statement.not_actions) {
            (Some(a), _) => Some((false, a.iter().map(|a| Glob::of(a)).collect())),
            (None, Some(a)) => Some((true, a.iter().map(|a| Glob::of(a)).collect())),
            (None, None) => None,
        };
        Self { resources, actions }
    }

    fn covers_action(&self, action: &str) -> bool {
        self.actions
            .as_ref()
            .is_none_or(|(negated, globs)| globs.iter().any(|g| g.matches(action)) != *negated)
    }

    fn covers_resource(&self, resource: &Resource) -> bool {
        self.resources.as_ref().is_some_and(|(negated, specs)| {
            specs.iter().any(|spec| resource.matches_parts(spec)) != *negated
        })
    }

    fn covers(&self, action: &str, resource: &Resource) -> bool {
        self.covers_action(action) && self.covers_resource(resource)
    }
}

/// The policy of a built-in role, evaluated by [`decide`] like any custom role's.
///
/// - `no_access`: nothing.
/// - `reader`: reads projects (and everything in them), the audit log, members, teams and
///   custom roles.
/// - `writer`: also every action on projects, environments, flags and segments.
/// - `admin`: also members, access tokens, webhooks, custom roles and teams.
/// - `owner`: everything, the account's ownership included.
///
/// ```
/// use domain::policy::{base_role_policy, decide, Resource};
/// use domain::role::Role;
/// let flag = Resource::project("shop").environment("production").flag("f");
/// assert!(decide(&[base_role_policy(Role::Writer)], "updateOn", &flag).is_allowed());
/// assert!(!decide(&[base_role_policy(Role::Reader)], "updateOn", &flag).is_allowed());
/// assert!(!decide(&[base_role_policy(Role::Admin)], "transferOwnership", &Resource::account()).is_allowed());
/// ```
pub fn base_role_policy(role: Role) -> Policy {
    use actions::ResourceKind as K;
    let all_of = |kinds: &[K]| {
        let specs: Vec<&str> = kinds.iter().map(|k| k.specifier()).collect();
        Statement::allow(&specs, &["*"])
    };
    let reads = || {
        vec![
            Statement::allow(&[K::Project.specifier()], &["viewProject"]),
            Statement::allow(&[K::Account.specifier()], &["viewAuditLog"]),
            Statement::allow(&[K::Member.specifier()], &["viewMembers"]),
            Statement::allow(&[K::Role.specifier()], &["viewRoles"]),
            Statement::allow(&[K::Team.specifier()], &["viewTeams"]),
        ]
    };
    let projects = [K::Project, K::Environment, K::Flag, K::Segment];
    let statements = match role {
        Role::NoAccess => Vec::new(),
        Role::Reader => reads(),
        Role::Writer => {
            let mut statements = reads();
            statements.push(all_of(&projects));
            statements
        }
        Role::Admin => {
            let mut statements = reads();
            statements.push(all_of(&[
                K::Project,
                K::Environment,
                K::Flag,
                K::Segment,
                K::Member,
                K::Token,
                K::Webhook,
                K::Role,
                K::Team,
            ]));
            statements
        }
        Role::Owner => vec![all_of(&K::ALL)],
    };
    Policy::new(role.as_str(), statements)
}

/// The statement that decided, and the policy it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason<'p> {
    /// The policy's name (the role's key).
    pub policy: &'p str,
    /// The statement.
    pub statement: &'p Statement,
}

/// What [`decide`] found: allowed by a statement, or denied by one (or by none allowing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision<'p> {
    /// An allow statement matched, and no deny statement did.
    Allowed(Reason<'p>),
    /// A deny statement matched (`Some`), or no allow statement did (`None`).
    Denied(Option<Reason<'p>>),
}

impl<'p> Decision<'p> {
    /// Whether the action is allowed.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allowed(_))
    }

    /// The deciding statement, if one decided.
    pub fn reason(&self) -> Option<Reason<'p>> {
        match self {
            Decision::Allowed(reason) => Some(*reason),
            Decision::Denied(reason) => *reason,
        }
    }
}

/// Decides whether `policies` (all of a caller's: base role, custom roles, teams' roles, inline
/// role) allow `action` on `resource`: denied when any deny statement covers it, else allowed
/// when an allow statement does (the first in order is the reason), else denied.
///
/// ```
/// use domain::policy::{decide, Decision, Policy, Resource, Statement};
/// let writer = Policy::new("writer", vec![Statement::allow(&["proj/*:env/*:flag/*"], &["*"])]);
/// let no_prod = Policy::new("no-prod", vec![Statement::deny(&["proj/*:env/production:flag/*"], &["*"])]);
/// let policies = [writer, no_prod];
/// let test = Resource::project("shop").environment("test").flag("f");
/// let production = Resource::project("shop").environment("production").flag("f");
/// assert!(decide(&policies, "updateOn", &test).is_allowed());
/// let denied = decide(&policies, "updateOn", &production);
/// assert_eq!(denied.reason().unwrap().policy, "no-prod");
/// assert_eq!(decide(&policies, "createProject", &Resource::project("x")), Decision::Denied(None));
/// ```
pub fn decide<'p>(policies: &'p [Policy], action: &str, resource: &Resource) -> Decision<'p> {
    let mut allowed = None;
    for policy in policies {
        for (statement, compiled) in policy.statements.iter().zip(&policy.compiled) {
            let is_deny = statement.effect == Effect::Deny;
            // Once an allow is found, only a deny can change the outcome.
            if !is_deny && allowed.is_some() {
                continue;
            }
            if compiled.covers(action, resource) {
                let reason = Reason {
                    policy: &policy.name,
                    statement,
                };
                if is_deny {
                    return Decision::Denied(Some(reason));
                }
                allowed = Some(reason);
            }
        }
    }
    allowed.map_or(Decision::Denied(None), Decision::Allowed)
}

/// [`decide`] for each of `actions` on one resource, in order: what `_access` reports. Each
/// statement's resources are matched against `resource` once, not once per action, so the
/// cost is that of one decision plus a glance at each covering statement's actions per action.
///
/// ```
/// use domain::policy::{decide, decide_each, Policy, Resource, Statement};
/// let policies = [Policy::new("toggler", vec![Statement::allow(&["proj/*:env/test:flag/*"], &["updateOn"])])];
/// let flag = Resource::project("web").environment("test").flag("f");
/// let each = decide_each(&policies, &["updateOn", "deleteFlag"], &flag);
/// assert_eq!(each, [decide(&policies, "updateOn", &flag), decide(&policies, "deleteFlag", &flag)]);
/// ```
pub fn decide_each<'p>(
    policies: &'p [Policy],
    actions: &[&str],
    resource: &Resource,
) -> Vec<Decision<'p>> {
    // The statements whose resources cover `resource`, in order (the order decides the reason).
    let covering: Vec<(&'p Policy, &'p Statement, &'p Compiled)> = policies
        .iter()
        .flat_map(|policy| {
            policy
                .statements
                .iter()
                .zip(&policy.compiled)
                .map(move |(statement, compiled)| (policy, statement, compiled))
        })
        .filter(|(_, _, compiled)| compiled.covers_resource(resource))
        .collect();
    actions
        .iter()
        .map(|action| {
            let mut allowed = None;
            for (policy, statement, compiled) in &covering {
                let is_deny = statement.effect == Effect::Deny;
                if !is_deny && allowed.is_some() {
                    continue;
                }
                if compiled.covers_action(action) {
                    let reason = Reason {
                        policy: &policy.name,
                        statement,
                    };
                    if is_deny {
                        return Decision::Denied(Some(reason));
                    }
                    allowed = Some(reason);
                }
            }
            allowed.map_or(Decision::Denied(None), Decision::Allowed)
        })
        .collect()
}

/// [`decide`] of `action` on `resource` in each of `environments`: `resource` is in every
/// environment (an `env/*` part, as [`Resource::split_environment`] makes it), and each
/// decision is the one on it with that part made `env/{key}` (`*` leaves it `env/*`). What a
/// change to what every environment shares asks for: each statement's other parts are matched
/// once for all the environments, so a statement about another project or flag costs one
/// look, not one per environment.
///
/// ```
/// use domain::policy::{decide, decide_in_environments, Policy, Resource, Statement};
/// let policies = [Policy::new("no-prod", vec![
///     Statement::allow(&["proj/*:env/*:flag/*"], &["*"]),
///     Statement::deny(&["proj/*:env/production:flag/*"], &["*"]),
/// ])];
/// let flag = Resource::project("web").environment("*").flag("f");
/// let decided = decide_in_environments(&policies, "updateName", &flag, &["*", "test", "production"]);
/// assert_eq!(decided.iter().map(|d| d.is_allowed()).collect::<Vec<_>>(), [true, true, false]);
/// let production = flag.in_environment("production").unwrap();
/// assert_eq!(decided[2], decide(&policies, "updateName", &production));
/// ```
pub fn decide_in_environments<'p>(
    policies: &'p [Policy],
    action: &str,
    resource: &Resource,
    environments: &[&str],
) -> Vec<Decision<'p>> {
    let Some(at) = resource.parts.iter().position(|part| part.text == "env/*") else {
        return environments
            .iter()
            .map(|_| decide(policies, action, resource))
            .collect();
    };
    let texts: Vec<String> = environments
        .iter()
        .map(|key| format!("env/{key}"))
        .collect();
    let env_tags = &resource.parts[at].tags;
    let mut allowed: Vec<Option<Reason<'p>>> = vec![None; texts.len()];
    let mut denied: Vec<Option<Reason<'p>>> = vec![None; texts.len()];
    let mut covered = vec![false; texts.len()];
    let mut undenied = texts.len();
    for policy in policies {
        for (statement, compiled) in policy.statements.iter().zip(&policy.compiled) {
            // Once every environment is denied, nothing can change a decision.
            if undenied == 0 {
                break;
            }
            if !compiled.covers_action(action) {
                continue;
            }
            let Some((negated, specs)) = &compiled.resources else {
                continue;
            };
            covered.iter_mut().for_each(|c| *c = false);
            for spec in specs {
                let others_match = spec.len() == resource.parts.len()
                    && spec
                        .iter()
                        .zip(&resource.parts)
                        .enumerate()
                        .all(|(i, (p, part))| {
                            i == at
                                || (p.kind_name.matches(&part.text)
                                    && p.tags.iter().all(|tag| part.tags.iter().any(|t| t == tag)))
                        });
                if !others_match {
                    continue;
                }
                let env = &spec[at];
                if !env.tags.iter().all(|tag| env_tags.iter().any(|t| t == tag)) {
                    continue;
                }
                for (c, text) in covered.iter_mut().zip(&texts) {
                    *c = *c || env.kind_name.matches(text);
                }
            }
            let reason = Reason {
                policy: &policy.name,
                statement,
            };
            let is_deny = statement.effect == Effect::Deny;
            for (e, c) in covered.iter().enumerate() {
                if *c == *negated || denied[e].is_some() {
                    continue;
                }
                if is_deny {
                    denied[e] = Some(reason);
                    undenied -= 1;
                } else if allowed[e].is_none() {
                    allowed[e] = Some(reason);
                }
            }
        }
    }
    denied
        .into_iter()
        .zip(allowed)
        .map(|(denied, allowed)| match (denied, allowed) {
            (Some(reason), _) => Decision::Denied(Some(reason)),
            (None, Some(reason)) => Decision::Allowed(reason),
            (None, None) => Decision::Denied(None),
        })
        .collect()
}

#[cfg(test)]
mod tests;
