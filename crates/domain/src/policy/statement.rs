//! Statements and policies: what they allow and deny, as written and compiled for deciding.

use serde::{Deserialize, Serialize};

use super::pattern::{compile_specifier, glob, of_kinds, CompiledPart, Glob};
use super::specifier::{check_specifier, MAX_ACTION_CHARS};
use super::{actions, Access, Resource};
use crate::FieldError;

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Allows (or, in a webhook, selects) what it matches.
    Allow,
    /// Denies (or excludes) what it matches; wins over any allow.
    Deny,
}

/// A policy statement (of a custom role, an access token's inline role or a webhook): each
/// specifier must be of the grammar of `docs/roles.md` (kinds `acct`, `proj`, `env`, `flag`, `segment`, `member`,
/// `token`, `webhook`, `role`, `team`) and each action must name, or its glob match, an action of
/// the catalogue there; a list holds 1 to 50 entries. Exactly one of `resources` and
/// `notResources`, at most one of `actions` and `notActions`.
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = PolicyStatement))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Statement {
    /// `allow` or `deny` (deny wins).
    pub effect: Effect,
    /// Resource specifiers it covers (or `notResources`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_not_null"
    )]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub resources: Option<Vec<String>>,
    /// Resource specifiers it covers all but.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_not_null"
    )]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub not_resources: Option<Vec<String>>,
    /// Actions it covers (all when neither list is given).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_not_null"
    )]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub actions: Option<Vec<String>>,
    /// Actions it covers all but.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_not_null"
    )]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
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
    pub fn matches(&self, access: &Access) -> bool {
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
    pub(crate) statements: Vec<Statement>,
    /// The same statements, their specifiers split into parts once, for [`decide`](super::decide).
    pub(crate) compiled: Vec<Compiled>,
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
    /// its input; the resources are decided by [`decide`](super::decide) once known.
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

/// A statement with its specifiers split into parts and its globs told apart: what
/// [`Statement::covers`] does, without reading the text again at every decision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Compiled {
    /// `(negated, specifiers)`: `resources`, or `notResources` (negated); `None` covers nothing.
    pub(crate) resources: Option<(bool, Vec<Vec<CompiledPart>>)>,
    /// `(negated, globs)`: `actions`, or `notActions`; `None` covers every action.
    pub(crate) actions: Option<(bool, Vec<Glob>)>,
}

impl Compiled {
    pub(crate) fn of(statement: &Statement) -> Self {
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

    pub(crate) fn covers_action(&self, action: &str) -> bool {
        self.actions
            .as_ref()
            .is_none_or(|(negated, globs)| globs.iter().any(|g| g.matches(action)) != *negated)
    }

    pub(crate) fn covers_resource(&self, resource: &Resource) -> bool {
        self.resources.as_ref().is_some_and(|(negated, specs)| {
            specs.iter().any(|spec| resource.matches_parts(spec)) != *negated
        })
    }

    pub(crate) fn covers(&self, action: &str, resource: &Resource) -> bool {
        self.covers_action(action) && self.covers_resource(resource)
    }
}
