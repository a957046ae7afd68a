//! Deciding a request by policies: the built-in roles' policies, [`decide`] and its forms.

use super::statement::Compiled;
use super::{actions, Effect, Policy, Resource, Statement};
use crate::role::{Action, Grant, Role};

/// The policy of a built-in role, evaluated by [`decide`] like any custom role's: made from the
/// permission table ([`Role::can`]) and what each of its actions is in the catalogue
/// ([`Action::grants`]), the role's view actions first, then one statement over the kinds it
/// manages (the owner's, which may do everything, is one statement over every kind).
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
    let granted: Vec<Grant> = Action::ALL
        .iter()
        .filter(|action| role.can(**action))
        .map(|action| action.grants())
        .collect();
    if granted.len() == Action::ALL.len() {
        // Everything: one statement over every kind of resource.
        return Policy::new(role.as_str(), vec![all_of(&K::ALL)]);
    }
    let mut statements: Vec<Statement> = granted
        .iter()
        .flat_map(|grant| match grant {
            Grant::Only(actions) => *actions,
            Grant::Every(_) => &[],
        })
        .map(|(action, kind)| Statement::allow(&[kind.specifier()], &[action]))
        .collect();
    let managed: Vec<K> = K::ALL
        .into_iter()
        .filter(|kind| {
            granted
                .iter()
                .any(|grant| matches!(grant, Grant::Every(kinds) if kinds.contains(kind)))
        })
        .collect();
    if !managed.is_empty() {
        statements.push(all_of(&managed));
    }
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
