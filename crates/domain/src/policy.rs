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

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::audit::glob;
use crate::role::Role;
use crate::FieldError;

pub mod actions;
mod inclusion;

pub use inclusion::includes;

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

/// The grammar of [`check_specifier`] as a regular expression (for the OpenAPI document):
/// parts joined by `:`, each `acct` or `kind/name` (a name with at most [`MAX_NAME_GLOBS`]
/// `*`), the last optionally followed by `;tag,tag`.
///
/// ```
/// let specifier = regex::Regex::new(domain::policy::SPECIFIER_PATTERN).unwrap();
/// assert!(specifier.is_match("proj/shop:env/*:flag/*;beta"));
/// assert!(!specifier.is_match("project/shop"));
/// assert!(!specifier.is_match("proj/*a*a*a*a*a*a*a*a*"));
/// assert!(!specifier.is_match("proj/*;beta:env/*"));
/// ```
pub const SPECIFIER_PATTERN: &str = r"^((acct|(proj|env|flag|segment|member|token|webhook|role|team)/([A-Za-z0-9._@+-]+(\*[A-Za-z0-9._@+-]*){0,8}|(\*[A-Za-z0-9._@+-]*){1,8})):)*(acct|(proj|env|flag|segment|member|token|webhook|role|team)/([A-Za-z0-9._@+-]+(\*[A-Za-z0-9._@+-]*){0,8}|(\*[A-Za-z0-9._@+-]*){1,8}))(;[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*)?$";

/// What a policy statement's action (or glob of actions) looks like (for the OpenAPI document):
/// letters and `*`; [`Statement::validate`] also checks it names an action of the catalogue.
pub const ACTION_PATTERN: &str = r"^[A-Za-z*]+$";

/// The longest resource specifier of a statement, in characters.
pub const MAX_SPECIFIER_CHARS: usize = 512;

/// The most `*` a name of a resource specifier may hold (`proj/*-eu-*`): matching a glob costs
/// a search per `*`, and a request is decided against every specifier of the caller's roles.
pub const MAX_NAME_GLOBS: usize = 8;

/// The longest action (or glob of actions) of a statement, in characters.
pub const MAX_ACTION_CHARS: usize = 64;

/// The kinds of resource a specifier part may name, and whether each has a name.
const KINDS: [(&str, bool); 10] = [
    ("acct", false),
    ("proj", true),
    ("env", true),
    ("flag", true),
    ("segment", true),
    ("member", true),
    ("token", true),
    ("webhook", true),
    ("role", true),
    ("team", true),
];

/// Checks the syntax of a resource specifier of a policy statement: parts joined by `:`, each
/// `kind/name` (`acct` alone), the kind one of `acct`, `proj`, `env`, `flag`, `segment`,
/// `member`, `token`, `webhook`, `role`, `team`, the name a key or `*` glob (at most
/// [`MAX_NAME_GLOBS`] `*`); the last part optionally followed by `;tag,tag` (a resource is
/// checked for its own tags: a flag's on `flag/…`, a project's on `proj/…`).
///
/// ```
/// use domain::policy::check_specifier;
/// assert!(check_specifier("proj/shop:env/*:flag/*;beta").is_ok());
/// assert!(check_specifier("acct").is_ok());
/// assert!(check_specifier("project/shop").is_err());
/// assert!(check_specifier("proj/shop:").is_err());
/// assert!(check_specifier("proj/{tier:gold}").is_err());
/// ```
///
/// # Errors
/// What is wrong with it.
pub fn check_specifier(spec: &str) -> Result<(), String> {
    check_parts(spec)
}

/// Checks that a (well-formed) specifier's parts name a kind of resource that exists, in the
/// order resources nest (`proj/*:env/*:flag/*`, not `flag/x:proj/p` nor `proj/a:proj/b`): a
/// statement naming nothing would silently allow or deny nothing.
///
/// ```
/// use domain::policy::check_shape;
/// assert!(check_shape("proj/*:env/production:flag/*;beta").is_ok());
/// assert!(check_shape("member/*:token/*").is_ok());
/// assert!(check_shape("flag/x:proj/p").is_err());
/// assert!(check_shape("proj/a:proj/b").is_err());
/// ```
///
/// # Errors
/// A message naming the kinds of resources there are.
pub fn check_shape(spec: &str) -> Result<(), String> {
    let kinds: Vec<&str> = spec
        .split(':')
        .map(|part| {
            let kind_name = part.split(';').next().unwrap_or(part);
            kind_name.split('/').next().unwrap_or(kind_name)
        })
        .collect();
    let exists = actions::ResourceKind::ALL.iter().any(|kind| {
        let shape: Vec<&str> = kind
            .specifier()
            .split(':')
            .map(|part| part.split('/').next().unwrap_or(part))
            .collect();
        shape == kinds
    });
    if exists {
        Ok(())
    } else {
        let shapes: Vec<&str> = actions::ResourceKind::ALL
            .iter()
            .map(|kind| kind.specifier())
            .collect();
        Err(format!(
            "'{spec}' names no resource: its parts must nest as in {}",
            shapes.join(", ")
        ))
    }
}

fn check_parts(spec: &str) -> Result<(), String> {
    if spec.chars().count() > MAX_SPECIFIER_CHARS {
        return Err(format!(
            "a resource specifier has at most {MAX_SPECIFIER_CHARS} characters"
        ));
    }
    let parts = spec.split(':').count();
    for (at, part) in spec.split(':').enumerate() {
        let (kind_name, tags) = match part.split_once(';') {
            Some((kind_name, tags)) => (kind_name, Some(tags)),
            None => (part, None),
        };
        let (kind, name) = match kind_name.split_once('/') {
            Some((kind, name)) => (kind, Some(name)),
            None => (kind_name, None),
        };
        let known = KINDS.iter().find(|(k, _)| *k == kind);
        let Some((_, named)) = known else {
            return Err(format!(
                "'{part}' in '{spec}' is not a resource: expected kind/name with a kind among \
                 acct, proj, env, flag, segment, member, token, webhook, role, team"
            ));
        };
        match name {
            Some(name) if !*named => {
                return Err(format!("'{kind}' has no name ('{name}' in '{spec}')"));
            }
            None if *named => {
                return Err(format!(
                    "'{kind}' needs a name or '*' ('{kind}/*' in '{spec}')"
                ));
            }
            Some(name) if !name_pattern_ok(name) => {
                return Err(format!(
                    "'{name}' in '{spec}' is not a name pattern: letters, digits, '.', '_', '-', \
                     '@', '+' and at most {MAX_NAME_GLOBS} '*' globs"
                ));
            }
            _ => {}
        }
        if let Some(tags) = tags {
            if at + 1 < parts {
                return Err(format!(
                    "';{tags}' in '{spec}': only the last part of a specifier carries tags (a \
                     resource is checked for its own tags, not for its project's or \
                     environment's)"
                ));
            }
            if tags.split(',').any(|t| !tag_ok(t)) {
                return Err(format!(
                    "';{tags}' in '{spec}' is not a list of tags: one or more of letters, digits, '.', '_', '-' joined by ','"
                ));
            }
        }
    }
    Ok(())
}

fn name_pattern_ok(name: &str) -> bool {
    !name.is_empty()
        && name.matches('*').count() <= MAX_NAME_GLOBS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '*' | '@' | '+'))
}

fn tag_ok(tag: &str) -> bool {
    !tag.is_empty()
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// One part of a resource: `kind/name` (or a bare kind, `acct`) and the tags the thing carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Part {
    /// `kind/name`, as a specifier writes it.
    text: String,
    /// Its tags (a flag's, a segment's, an environment's, a project's).
    tags: Vec<String>,
}

/// A resource a request acts on, as a specifier's parts with each one's tags, so that a
/// statement's `;tag` qualifiers can be checked.
///
/// ```
/// use domain::policy::Resource;
/// let flag = Resource::project("shop").environment("production").flag("checkout");
/// assert_eq!(flag.to_string(), "proj/shop:env/production:flag/checkout");
/// assert!(flag.matches("proj/*:env/prod*:flag/*"));
/// assert!(!flag.matches("proj/*:env/*"), "parts must line up");
/// assert_eq!(Resource::from_specifier("member/abc").to_string(), "member/abc");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resource {
    parts: Vec<Part>,
}

impl Resource {
    fn part(kind: &str, name: &str) -> Part {
        Part {
            text: format!("{kind}/{name}"),
            tags: Vec::new(),
        }
    }

    fn then(mut self, kind: &str, name: &str) -> Self {
        self.parts.push(Self::part(kind, name));
        self
    }

    /// `acct`: the account itself.
    pub fn account() -> Self {
        Self {
            parts: vec![Part {
                text: "acct".into(),
                tags: Vec::new(),
            }],
        }
    }

    /// `proj/{key}`.
    pub fn project(key: &str) -> Self {
        Self {
            parts: vec![Self::part("proj", key)],
        }
    }

    /// `…:env/{key}`, inside this project.
    #[must_use]
    pub fn environment(self, key: &str) -> Self {
        self.then("env", key)
    }

    /// `…:flag/{key}`, inside this environment.
    #[must_use]
    pub fn flag(self, key: &str) -> Self {
        self.then("flag", key)
    }

    /// `…:segment/{key}`, inside this environment.
    #[must_use]
    pub fn segment(self, key: &str) -> Self {
        self.then("segment", key)
    }

    /// `member/{id}`.
    pub fn member(id: &str) -> Self {
        Self {
            parts: vec![Self::part("member", id)],
        }
    }

    /// `…:token/{name}`, of this member.
    #[must_use]
    pub fn token(self, name: &str) -> Self {
        self.then("token", name)
    }

    /// `webhook/{id}`.
    pub fn webhook(id: &str) -> Self {
        Self {
            parts: vec![Self::part("webhook", id)],
        }
    }

    /// `role/{key}`: a custom role.
    pub fn role(key: &str) -> Self {
        Self {
            parts: vec![Self::part("role", key)],
        }
    }

    /// `team/{key}`.
    pub fn team(key: &str) -> Self {
        Self {
            parts: vec![Self::part("team", key)],
        }
    }

    /// The same resource, its last part carrying `tags`.
    #[must_use]
    pub fn with_tags(mut self, tags: &[String]) -> Self {
        if let Some(last) = self.parts.last_mut() {
            last.tags = tags.to_vec();
        }
        self
    }

    /// The same resource in environment `key`, when it is in every environment (its
    /// environment part is `env/*`): a change to a flag in every environment is one to each of
    /// them, which a statement naming one environment may deny.
    ///
    /// ```
    /// use domain::policy::Resource;
    /// let everywhere = Resource::project("shop").environment("*").flag("f");
    /// let production = everywhere.in_environment("production").unwrap();
    /// assert_eq!(production.to_string(), "proj/shop:env/production:flag/f");
    /// assert!(production.in_environment("test").is_none(), "already in one environment");
    /// ```
    #[must_use]
    pub fn in_environment(&self, key: &str) -> Option<Resource> {
        let at = self.parts.iter().position(|part| part.text == "env/*")?;
        let mut resource = self.clone();
        resource.parts[at].text = format!("env/{key}");
        Some(resource)
    }

    /// This resource as it is in every environment (its `env/{key}` part made `env/*`) and the
    /// environment's key; `None` for a resource in no environment.
    ///
    /// ```
    /// use domain::policy::Resource;
    /// let flag = Resource::project("shop").environment("test").flag("f");
    /// let (everywhere, env) = flag.split_environment().unwrap();
    /// assert_eq!((everywhere.to_string().as_str(), env), ("proj/shop:env/*:flag/f", "test"));
    /// assert!(Resource::project("shop").split_environment().is_none());
    /// ```
    pub fn split_environment(&self) -> Option<(Resource, &str)> {
        let at = self
            .parts
            .iter()
            .position(|part| part.text.starts_with("env/"))?;
        let key = self.parts[at].text.strip_prefix("env/")?;
        let mut everywhere = self.clone();
        everywhere.parts[at].text = "env/*".to_owned();
        Some((everywhere, key))
    }

    /// A resource from a specifier without tags (an audit access's `resource`).
    pub fn from_specifier(spec: &str) -> Self {
        Self {
            parts: spec
                .split(':')
                .map(|text| Part {
                    text: text.to_owned(),
                    tags: Vec::new(),
                })
                .collect(),
        }
    }

    /// Whether the specifier `pattern` names this resource: as many parts, each part's
    /// `kind/name` matching its glob, and each `;tag` of the pattern carried by the part.
    pub fn matches(&self, pattern: &str) -> bool {
        self.matches_parts(&compile_specifier(pattern))
    }
}

impl Resource {
    /// [`Resource::matches`] for a specifier already split into parts.
    fn matches_parts(&self, pattern: &[CompiledPart]) -> bool {
        pattern.len() == self.parts.len()
            && pattern.iter().zip(&self.parts).all(|(p, part)| {
                p.kind_name.matches(&part.text)
                    && p.tags.iter().all(|tag| part.tags.iter().any(|t| t == tag))
            })
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            f.write_str(&part.text)?;
        }
        Ok(())
    }
}

/// An action on a resource: what a request asks [`decide`] about, and (as an
/// [`Access`](crate::audit::Access), without tags) what its audit entry records.
///
/// ```
/// use domain::policy::{Request, Resource};
/// let on = Request::new("updateOn", Resource::project("web").environment("test").flag("f"));
/// assert_eq!(on.to_access().resource, "proj/web:env/test:flag/f");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Request {
    /// The action's name (`updateOn`).
    pub action: String,
    /// What it is done to.
    pub resource: Resource,
}

impl Request {
    /// `action` on `resource`.
    pub fn new(action: &str, resource: Resource) -> Self {
        Self {
            action: action.to_owned(),
            resource,
        }
    }

    /// As an audit entry records it: the resource's specifier, without tags.
    pub fn to_access(&self) -> crate::audit::Access {
        crate::audit::Access {
            action: self.action.clone(),
            resource: self.resource.to_string(),
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
