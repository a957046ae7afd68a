//! What a caller may do: its policies, decided by `domain::policy::decide` for every action on
//! every resource a request touches. Built-in roles are policies like any other
//! ([`domain::policy::base_role_policy`]), so there is one mechanism.
//!
//! A caller holds one or two *sets* of policies, and every set must allow: the token's (its
//! base role, its custom roles or its inline role) and, for a personal token, its member's (base
//! role and custom roles): a personal token never does what its member may not.

use std::sync::{Arc, OnceLock};

use domain::policy::actions::ResourceKind;
use domain::policy::{self, Decision, Policy, Request, Resource, Statement};
use domain::role::{Action, Role};

use crate::{ServiceError, ServiceResult};

/// What a caller may do to one resource (its `_access`): every action of the resource's kind
/// (`domain::policy::actions`), allowed or denied, each with the statement that decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// The actions the caller may do to it.
    pub allowed: Vec<ActionAccess>,
    /// The actions it may not.
    pub denied: Vec<ActionAccess>,
}

/// One action in an [`Access`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionAccess {
    /// The action's name.
    pub action: &'static str,
    /// The statement that decided, and its role; none for an action no statement allows, or
    /// one that needs the `admin` base role the caller lacks.
    pub reason: Option<AccessReason>,
}

/// The statement that decided an action, and the role (policy) it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessReason {
    /// The role's key (a built-in role's name, `inline` for a token's inline role).
    pub role_name: String,
    /// The statement.
    pub statement: Statement,
}

fn reason_of(reason: policy::Reason<'_>) -> AccessReason {
    AccessReason {
        role_name: reason.policy.to_owned(),
        statement: reason.statement.clone(),
    }
}

/// An action's decision by every set so far: allowed (with the first set's reason) until a
/// set refuses it (with that set's reason, if a statement refused).
type Verdict<'p> = (bool, Option<policy::Reason<'p>>);

/// Adds one more set's `decision` to `verdict`: every set must allow.
fn combine<'p>(verdict: &mut Verdict<'p>, decision: Decision<'p>) {
    match decision {
        _ if !verdict.0 => {}
        Decision::Allowed(reason) => verdict.1 = verdict.1.or(Some(reason)),
        Decision::Denied(reason) => *verdict = (false, reason),
    }
}

impl Access {
    /// Lists `action` as `verdict` says, denied without a reason when the caller's base role
    /// does not permit it (`base_allows`).
    fn record(
        &mut self,
        action: &'static str,
        verdict: Verdict<'_>,
        base_allows: impl Fn(&str) -> bool,
    ) {
        let (allowed, reason) = verdict;
        if allowed && base_allows(action) {
            self.allowed.push(ActionAccess {
                action,
                reason: reason.map(reason_of),
            });
        } else {
            self.denied.push(ActionAccess {
                action,
                reason: if allowed { None } else { reason.map(reason_of) },
            });
        }
    }
}

/// How many requests [`Permissions::require_all`] decides one by one, without grouping them.
const FEW_REQUESTS: usize = 8;

/// A refusal of `action` on `resource`, as a message, when `decision` is one.
fn refusal(action: &str, resource: &Resource, decision: Decision<'_>) -> Result<(), String> {
    match decision {
        Decision::Allowed(_) => Ok(()),
        Decision::Denied(Some(reason)) => Err(format!(
            "'{action}' on '{resource}' is denied by a statement of the role '{}'",
            reason.policy
        )),
        Decision::Denied(None) => Err(format!(
            "no role of the caller allows '{action}' on '{resource}'"
        )),
    }
}

/// A set of policies of which one allow suffices (deny still wins).
pub(crate) type PolicySet = Arc<[Policy]>;

/// The built-in policy of `role`, made once.
pub(crate) fn built_in(role: Role) -> PolicySet {
    static SETS: OnceLock<Vec<PolicySet>> = OnceLock::new();
    let sets = SETS.get_or_init(|| {
        Role::ALL
            .iter()
            .map(|role| Arc::from(vec![policy::base_role_policy(*role)]))
            .collect()
    });
    let at = Role::ALL.iter().position(|r| *r == role).unwrap_or(0);
    Arc::clone(&sets[at])
}

/// The most resource specifiers (`resources` and `notResources` entries) the policies a caller
/// acts with may hold together: each decision reads them all, once per environment of a change
/// to what a flag's environments share, so a caller beyond it is refused everything (fail
/// closed) rather than decided at a cost its roles' size sets. 50 roles of 20 statements of two
/// specifiers each fit; the roles of one caller (its own, its teams', its token's) can be
/// merged or trimmed by an administrator.
pub const MAX_CALLER_SPECIFIERS: usize = 2_500;

/// What a caller may do: sets of policies that must all allow an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Permissions {
    sets: Vec<PolicySet>,
    /// Whether the sets are exactly the built-in policy of the caller's role (then the built-in
    /// permission table answers, in its own words, what the role may not do).
    built_in_only: bool,
    /// How many specifiers the sets hold, when more than [`MAX_CALLER_SPECIFIERS`].
    oversized: Option<usize>,
}

impl Permissions {
    /// Those of the built-in role `role` alone.
    pub(crate) fn of_role(role: Role) -> Self {
        Self {
            sets: vec![built_in(role)],
            built_in_only: true,
            oversized: None,
        }
    }

    /// Those of `sets` (each must allow).
    pub(crate) fn of_sets(sets: Vec<PolicySet>) -> Self {
        let specifiers: usize = sets
            .iter()
            .flat_map(|set| set.iter())
            .flat_map(|policy| policy.statements())
            .map(|statement| {
                statement.resources.as_ref().map_or(0, Vec::len)
                    + statement.not_resources.as_ref().map_or(0, Vec::len)
            })
            .sum();
        Self {
            sets,
            built_in_only: false,
            oversized: (specifiers > MAX_CALLER_SPECIFIERS).then_some(specifiers),
        }
    }

    /// Why every request of the caller is refused, if its policies are past
    /// [`MAX_CALLER_SPECIFIERS`].
    pub(crate) fn bound_refusal(&self) -> Option<String> {
        self.oversized.map(|count| {
            format!(
                "the caller's roles hold {count} resource specifiers together, more than the \
                 {MAX_CALLER_SPECIFIERS} a request is decided against: an administrator can \
                 merge or trim them"
            )
        })
    }

    /// Whether these permissions allow every request `other`'s allow (see
    /// [`policy::includes`]): each of these sets must include one of `other`'s, since `other`
    /// does only what all its sets allow. `false` when it cannot be shown.
    pub(crate) fn include(&self, other: &Self) -> bool {
        if other.oversized.is_some() {
            // Refused everything (see `bound_refusal`).
            return true;
        }
        self.oversized.is_none()
            && self.sets.iter().all(|outer| {
                other
                    .sets
                    .iter()
                    .any(|inner| policy::includes(outer, inner))
            })
    }

    /// Whether only the built-in role's policy is in effect.
    pub(crate) fn built_in_only(&self) -> bool {
        self.built_in_only
    }

    /// Whether every set allows one of the actions a use case of `permission` consists of, on
    /// some resource: asked before the input is read; the resources are decided once known.
    pub(crate) fn may_do_some(&self, permission: Action) -> bool {
        if self.oversized.is_some() {
            return false;
        }
        self.sets.iter().all(|set| {
            permission
                .catalogue_actions()
                .any(|action| set.iter().any(|p| p.may_allow(action)))
        })
    }

    /// [`Permissions::may_do_some`] on resources inside project `project`.
    pub(crate) fn may_do_some_in(&self, permission: Action, project: &str) -> bool {
        if self.oversized.is_some() {
            return false;
        }
        self.sets.iter().all(|set| {
            permission
                .catalogue_actions()
                .any(|action| set.iter().any(|p| p.may_allow_in(action, project)))
        })
    }

    /// Whether every set allows `action` on `resource`; the first refusal, as a message.
    pub(crate) fn decide(&self, action: &str, resource: &Resource) -> Result<(), String> {
        if let Some(refusal) = self.bound_refusal() {
            return Err(refusal);
        }
        for set in &self.sets {
            refusal(action, resource, policy::decide(set, action, resource))?;
        }
        Ok(())
    }

    /// Every action of `kind` on `resource`, allowed (by every set: the first set's allowing
    /// statement is the reason) or denied (the first denying set's statement, if one denied);
    /// `base_allows` says whether the caller's base role permits the action at all.
    pub(crate) fn access(
        &self,
        kind: ResourceKind,
        resource: &Resource,
        base_allows: impl Fn(&str) -> bool,
    ) -> Access {
        let mut access = Access::default();
        if self.oversized.is_some() {
            access.denied = policy::actions::of_kind(kind)
                .map(|action| ActionAccess {
                    action: action.name,
                    reason: None,
                })
                .collect();
            return access;
        }
        let actions: Vec<&str> = policy::actions::of_kind(kind).map(|a| a.name).collect();
        // Each set's statements are matched against the resource once for all the actions.
        let decided: Vec<Vec<Decision>> = self
            .sets
            .iter()
            .map(|set| policy::decide_each(set, &actions, resource))
            .collect();
        for (at, action) in actions.iter().enumerate() {
            let mut verdict: Verdict<'_> = (true, None);
            for decisions in &decided {
                let decision = decisions.get(at).copied().unwrap_or(Decision::Denied(None));
                combine(&mut verdict, decision);
            }
            access.record(action, verdict, &base_allows);
        }
        access
    }

    /// The `_access` of a flag (`everywhere`: the flag in `env/*`) in each environment of
    /// `shown`, given to `each` one at a time: see `Caller::flag_access`. Each action is decided
    /// once for `env/*` and all of `environments` ([`policy::decide_in_environments`]), and
    /// only the reasons of one environment are held (cloned) at a time.
    pub(crate) fn flag_access<E>(
        &self,
        everywhere: &Resource,
        environments: &[&str],
        shown: &[&str],
        base_allows: impl Fn(&str) -> bool,
        mut each: impl FnMut(&str, Access) -> Result<(), E>,
    ) -> Result<(), E> {
        use policy::actions::{FLAG_CREATION, FLAG_WIDE};
        if self.oversized.is_some() {
            for env in shown {
                each(env, self.access(ResourceKind::Flag, everywhere, |_| false))?;
            }
            return Ok(());
        }
        let keys: Vec<&str> = std::iter::once("*")
            .chain(environments.iter().copied())
            .collect();
        let actions: Vec<&policy::actions::ActionInfo> =
            policy::actions::of_kind(ResourceKind::Flag).collect();
        // verdicts[action][key]: allowed by every set (the first set's reason), or denied (by
        // the first set refusing).
        let verdicts: Vec<Vec<Verdict<'_>>> = actions
            .iter()
            .map(|action| {
                let mut combined: Vec<Verdict<'_>> = vec![(true, None); keys.len()];
                for set in &self.sets {
                    let decided =
                        policy::decide_in_environments(set, action.name, everywhere, &keys);
                    for (verdict, decision) in combined.iter_mut().zip(decided) {
                        combine(verdict, decision);
                    }
                }
                combined
            })
            .collect();
        for env in shown {
            let at = keys.iter().position(|key| key == env);
            let mut access = Access::default();
            for (action, verdict) in actions.iter().zip(&verdicts) {
                let verdict = if FLAG_WIDE.contains(&action.name) {
                    // Decided on `env/*` and in every environment: the first refusal decides.
                    verdict
                        .iter()
                        .find(|(allowed, _)| !allowed)
                        .copied()
                        .unwrap_or(verdict[0])
                } else if FLAG_CREATION.contains(&action.name) {
                    verdict[0]
                } else {
                    at.and_then(|at| verdict.get(at).copied())
                        .unwrap_or((false, None))
                };
                access.record(action.name, verdict, &base_allows);
            }
            each(env, access)?;
        }
        Ok(())
    }

    /// Refuses unless every request is allowed.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`] naming the first request refused and why.
    pub(crate) fn require_all(&self, requests: &[Request]) -> ServiceResult<()> {
        use std::collections::{HashMap, HashSet};
        if let Some(refusal) = self.bound_refusal() {
            return Err(ServiceError::NotPermitted(refusal));
        }
        // A few requests (a toggle asks for two, alike) are decided one by one: grouping them
        // would cost more than it saves.
        if requests.len() <= FEW_REQUESTS {
            for (at, request) in requests.iter().enumerate() {
                if !requests[..at].contains(request) {
                    self.decide(&request.action, &request.resource)
                        .map_err(ServiceError::NotPermitted)?;
                }
            }
            return Ok(());
        }
        // Each distinct request once (a patch may ask for one action on one resource many
        // times: an instruction repeated), and the requests of one action on one resource in
        // several environments (a change to what every environment of a flag shares) together:
        // a decision reads every statement of the caller's roles, and this way a statement
        // about another project or flag is read once, not once per environment.
        let mut distinct: HashSet<&Request> = HashSet::new();
        let mut groups: Vec<(&str, Resource, Vec<&str>)> = Vec::new();
        let mut group_of: HashMap<(&str, Resource), usize> = HashMap::new();
        let mut refused: HashMap<&Request, String> = HashMap::new();
        for request in requests {
            if !distinct.insert(request) {
                continue;
            }
            let Some((everywhere, env)) = request.resource.split_environment() else {
                if let Err(message) = self.decide(&request.action, &request.resource) {
                    refused.insert(request, message);
                }
                continue;
            };
            let key = (request.action.as_str(), everywhere);
            let at = *group_of.entry(key.clone()).or_insert_with(|| {
                groups.push((key.0, key.1, Vec::new()));
                groups.len() - 1
            });
            groups[at].2.push(env);
        }
        let mut group_refusals: HashMap<(&str, &Resource, &str), String> = HashMap::new();
        for (action, everywhere, envs) in &groups {
            for set in &self.sets {
                let decided = policy::decide_in_environments(set, action, everywhere, envs);
                for (env, decision) in envs.iter().zip(decided) {
                    let key = (*action, everywhere, *env);
                    if group_refusals.contains_key(&key) {
                        continue;
                    }
                    let there = everywhere
                        .in_environment(env)
                        .unwrap_or_else(|| everywhere.clone());
                    if let Err(message) = refusal(action, &there, decision) {
                        group_refusals.insert(key, message);
                    }
                }
            }
        }
        // The first refused request, in the order asked.
        for request in requests {
            let message = match request.resource.split_environment() {
                Some((everywhere, env)) => group_refusals
                    .get(&(request.action.as_str(), &everywhere, env))
                    .cloned(),
                None => refused.get(request).cloned(),
            };
            if let Some(message) = message {
                return Err(ServiceError::NotPermitted(message));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_permissions_agree_with_the_permission_table() {
        for role in Role::ALL {
            let permissions = Permissions::of_role(role);
            for action in Action::ALL {
                assert_eq!(
                    permissions.may_do_some(action),
                    role.can(action),
                    "{role} {action:?}"
                );
            }
        }
    }

    /// `require_all` decides requests grouped by environment as each would be decided alone:
    /// the first refused request, in the order asked, names itself.
    #[test]
    fn requests_in_many_environments_are_decided_as_each_alone() {
        let no_production = Arc::from(vec![Policy::new(
            "no-production",
            vec![
                policy::Statement::allow(&["proj/*:env/*:flag/*"], &["*"]),
                policy::Statement::allow(&["proj/*"], &["updateName"]),
                policy::Statement::deny(&["proj/*:env/production:flag/*"], &["updateName"]),
            ],
        )]);
        let permissions = Permissions::of_sets(vec![no_production, built_in(Role::Writer)]);
        let flag = |env: &str| Resource::project("shop").environment(env).flag("f");
        let asked = |action: &str, envs: &[&str]| -> Vec<Request> {
            envs.iter()
                .map(|env| Request::new(action, flag(env)))
                .collect()
        };
        // More than FEW_REQUESTS (grouped), and fewer (one by one).
        let everywhere = [
            "*",
            "test",
            "staging",
            "a",
            "b",
            "c",
            "d",
            "e",
            "production",
            "test",
        ];
        for (action, envs) in [
            ("updateName", &everywhere[..]),
            ("updateName", &everywhere[..3]),
            ("updateOn", &everywhere[..]),
        ] {
            let requests = asked(action, envs);
            let alone = requests
                .iter()
                .find_map(|r| permissions.decide(&r.action, &r.resource).err());
            let together = match permissions.require_all(&requests) {
                Err(ServiceError::NotPermitted(message)) => Some(message),
                Err(other) => panic!("{other:?}"),
                Ok(()) => None,
            };
            assert_eq!(together, alone, "{action} in {envs:?}");
        }
        let mut mixed = vec![
            Request::new("updateOn", flag("production")),
            Request::new("updateName", Resource::project("shop")),
        ];
        mixed.extend(asked("updateOn", &everywhere));
        mixed.push(Request::new("updateName", flag("production")));
        let Err(ServiceError::NotPermitted(message)) = permissions.require_all(&mixed) else {
            panic!("refused");
        };
        assert!(
            message.contains("'updateName' on 'proj/shop:env/production:flag/f'"),
            "{message}"
        );
    }

    #[test]
    fn every_set_must_allow() {
        let staging = Arc::from(vec![Policy::new(
            "staging",
            vec![policy::Statement::allow(
                &["proj/*:env/staging:flag/*"],
                &["updateOn"],
            )],
        )]);
        let flag = |env: &str| Resource::project("shop").environment(env).flag("f");
        let token_and_reader = Permissions::of_sets(vec![staging, built_in(Role::Reader)]);
        assert!(token_and_reader
            .decide("updateOn", &flag("staging"))
            .is_err());
        let token_and_writer = Permissions::of_sets(vec![
            token_and_reader.sets[0].clone(),
            built_in(Role::Writer),
        ]);
        assert!(token_and_writer
            .decide("updateOn", &flag("staging"))
            .is_ok());
        let refused = token_and_writer
            .decide("updateOn", &flag("production"))
            .unwrap_err();
        assert!(
            refused.contains("proj/shop:env/production:flag/f"),
            "{refused}"
        );
    }

    /// Requests decided end to end, over the in-memory store, for a caller whose policies are
    /// not a built-in role's (made here directly; `api_roles` gives them through the API).
    mod requests {
        use std::sync::Arc;

        use adapter_memory::MemoryStore;
        use domain::instruction::SemanticPatch;
        use domain::policy::Statement;
        use serde_json::json;

        use super::*;
        use crate::{use_case, Caller, FlagChange, PlainRepresentations, Service, SystemClock};

        fn service() -> (Service, Caller) {
            let service = Service::new(
                Arc::new(MemoryStore::new()),
                Arc::new(SystemClock::default()),
                Arc::new(PlainRepresentations),
            );
            service
                .authentication()
                .bootstrap(Some("owner-secret"), "o@example.com")
                .unwrap();
            let owner = service
                .authentication()
                .authenticate("owner-secret")
                .unwrap();
            for key in ["shop", "blog"] {
                let post = serde_json::from_value(json!({"key": key, "name": key})).unwrap();
                let permit = owner.may(use_case::CreateProject).unwrap();
                service.projects().create_project(&permit, post).unwrap();
                let flag =
                    serde_json::from_value(json!({"key": "f", "name": "F", "tags": ["beta"]}))
                        .unwrap();
                let permit = owner.may(use_case::CreateFlag).unwrap();
                service.flags().create_flag(&permit, key, flag).unwrap();
            }
            (service, owner)
        }

        /// `owner`, acting with the built-in `base` role and `statements` on top.
        fn with_policy(owner: &Caller, base: Role, statements: Vec<Statement>) -> Caller {
            let mut caller = owner.clone();
            caller.role = base;
            caller.permissions = Permissions::of_sets(vec![Arc::from(vec![
                policy::base_role_policy(base),
                Policy::new("custom", statements),
            ])]);
            caller
        }

        fn toggle(
            service: &Service,
            caller: &Caller,
            project: &str,
            env: &str,
        ) -> crate::ServiceResult<bool> {
            let patch = SemanticPatch::parse(json!({
                "environmentKey": env,
                "instructions": [{"kind": "turnFlagOn"}]
            }))
            .unwrap();
            let permit = caller.may(use_case::PatchFlag)?;
            service
                .flags()
                .patch_flag(&permit, project, "f", &FlagChange::Semantic(patch))
                .map(|view| view.flag.environments[env].on)
        }

        fn is_on(service: &Service, owner: &Caller, project: &str, env: &str) -> bool {
            service
                .flags()
                .get_flag(&owner.may(use_case::GetFlag).unwrap(), project, "f", &[])
                .unwrap()
                .flag
                .environments[env]
                .on
        }

        #[test]
        fn a_statement_allows_exactly_its_action_on_exactly_its_resource() {
            let (service, owner) = service();
            let toggler = with_policy(
                &owner,
                Role::Reader,
                vec![Statement::allow(
                    &["proj/shop:env/test:flag/*"],
                    &["updateOn"],
                )],
            );
            assert_eq!(toggle(&service, &toggler, "shop", "test").ok(), Some(true));
            // Another environment, another project: refused, and nothing changed.
            for (project, env) in [("shop", "production"), ("blog", "test")] {
                let refused = toggle(&service, &toggler, project, env).unwrap_err();
                assert!(
                    matches!(refused, ServiceError::NotPermitted(_)),
                    "{refused:?}"
                );
                assert!(refused
                    .to_string()
                    .contains(&format!("proj/{project}:env/{env}:flag/f")));
                assert!(!is_on(&service, &owner, project, env));
            }
            // Another action on the same flag: refused.
            let rename = domain::patch::JsonPatchBody::parse(
                json!([{"op": "replace", "path": "/name", "value": "G"}]),
            )
            .unwrap();
            let permit = toggler.may(use_case::PatchFlag).unwrap();
            let refused = service
                .flags()
                .patch_flag(&permit, "shop", "f", &FlagChange::JsonPatch(rename))
                .unwrap_err();
            assert!(
                matches!(refused, ServiceError::NotPermitted(_)),
                "{refused:?}"
            );
        }

        #[test]
        fn a_patch_that_changes_nothing_answers_only_who_may_read() {
            let (service, owner) = service();
            let blind = with_policy(
                &owner,
                Role::NoAccess,
                vec![Statement::allow(&["proj/*:env/*:flag/*"], &["updateOn"])],
            );
            let nothing = domain::patch::JsonPatchBody::parse(json!([])).unwrap();
            let permit = blind.may(use_case::PatchFlag).unwrap();
            let refused = service
                .flags()
                .patch_flag(&permit, "shop", "f", &FlagChange::JsonPatch(nothing))
                .unwrap_err();
            assert!(
                matches!(refused, ServiceError::NotPermitted(_)),
                "{refused:?}"
            );
        }

        #[test]
        fn a_deny_statement_overrides_the_base_role() {
            let (service, owner) = service();
            let no_production = with_policy(
                &owner,
                Role::Writer,
                vec![Statement::deny(&["proj/*:env/production:flag/*"], &["*"])],
            );
            assert_eq!(
                toggle(&service, &no_production, "shop", "test").ok(),
                Some(true)
            );
            let refused = toggle(&service, &no_production, "shop", "production").unwrap_err();
            assert!(
                refused
                    .to_string()
                    .contains("denied by a statement of the role 'custom'"),
                "{refused}"
            );
            assert!(!is_on(&service, &owner, "shop", "production"));
            // A change to the flag in every environment is one in production too.
            let rename = domain::patch::JsonPatchBody::parse(
                json!([{"op": "replace", "path": "/name", "value": "G"}]),
            )
            .unwrap();
            let permit = no_production.may(use_case::PatchFlag).unwrap();
            let refused = service
                .flags()
                .patch_flag(&permit, "shop", "f", &FlagChange::JsonPatch(rename))
                .unwrap_err();
            assert!(refused.to_string().contains("env/production"), "{refused}");
            let refused = service
                .flags()
                .delete_flag(
                    &no_production.may(use_case::DeleteFlag).unwrap(),
                    "shop",
                    "f",
                )
                .unwrap_err();
            assert!(
                matches!(refused, ServiceError::NotPermitted(_)),
                "{refused:?}"
            );
            assert!(service
                .flags()
                .get_flag(&owner.may(use_case::GetFlag).unwrap(), "shop", "f", &[])
                .is_ok());
        }

        #[test]
        fn tags_qualify_resources_and_retagging_needs_both() {
            let (service, owner) = service();
            let beta = with_policy(
                &owner,
                Role::Reader,
                vec![Statement::allow(&["proj/*:env/*:flag/*;beta"], &["*"])],
            );
            assert_eq!(toggle(&service, &beta, "shop", "test").ok(), Some(true));
            // Untagging the flag would take it out of the statement's reach: refused.
            let untag = domain::patch::JsonPatchBody::parse(
                json!([{"op": "replace", "path": "/tags", "value": []}]),
            )
            .unwrap();
            let permit = beta.may(use_case::PatchFlag).unwrap();
            let refused = service
                .flags()
                .patch_flag(&permit, "shop", "f", &FlagChange::JsonPatch(untag))
                .unwrap_err();
            assert!(
                matches!(refused, ServiceError::NotPermitted(_)),
                "{refused:?}"
            );
            let tags = service
                .flags()
                .get_flag(&owner.may(use_case::GetFlag).unwrap(), "shop", "f", &[])
                .unwrap()
                .flag
                .tags;
            assert_eq!(tags, ["beta"]);
        }

        #[test]
        fn reads_need_view_project_and_lists_show_only_what_may_be_read() {
            let (service, owner) = service();
            let shop_only = with_policy(
                &owner,
                Role::NoAccess,
                vec![Statement::allow(&["proj/shop"], &["viewProject"])],
            );
            assert!(service
                .flags()
                .get_flag(&shop_only.may(use_case::GetFlag).unwrap(), "shop", "f", &[])
                .is_ok());
            let refused = service
                .flags()
                .get_flag(&shop_only.may(use_case::GetFlag).unwrap(), "blog", "f", &[])
                .unwrap_err();
            assert!(
                matches!(refused, ServiceError::NotPermitted(_)),
                "{refused:?}"
            );
            let query = domain::query::ProjectQuery::parse(None, None, None, None).unwrap();
            let listed = service
                .projects()
                .list_projects(
                    &shop_only.may(use_case::ListProjects).unwrap(),
                    &query,
                    false,
                )
                .unwrap();
            let keys: Vec<&str> = listed
                .items
                .iter()
                .map(|p| p.project.key.as_str())
                .collect();
            assert_eq!((keys, listed.total), (vec!["shop"], 1));
            assert!(matches!(
                service.audit_log().list_audit_log(
                    &shop_only.may(use_case::ReadAuditLog).unwrap(),
                    &domain::audit::AuditQuery::parse(None, None, None, None, None).unwrap()
                ),
                Err(ServiceError::NotPermitted(_))
            ));
        }

        #[test]
        fn the_audit_log_shows_what_may_be_read() {
            let (service, owner) = service();
            let shop_auditor = with_policy(
                &owner,
                Role::NoAccess,
                vec![
                    Statement::allow(&["proj/shop"], &["viewProject"]),
                    Statement::allow(&["acct"], &["viewAuditLog"]),
                ],
            );
            let everything =
                domain::audit::AuditQuery::parse(None, None, None, None, None).unwrap();
            let seen = service
                .audit_log()
                .list_audit_log(
                    &shop_auditor.may(use_case::ReadAuditLog).unwrap(),
                    &everything,
                )
                .unwrap();
            let all = service
                .audit_log()
                .list_audit_log(&owner.may(use_case::ReadAuditLog).unwrap(), &everything)
                .unwrap();
            assert!(all.iter().any(|e| e
                .target
                .resources
                .iter()
                .any(|r| r.starts_with("proj/blog"))));
            assert!(!seen.is_empty());
            for entry in &seen {
                assert!(
                    entry
                        .target
                        .resources
                        .iter()
                        .all(|r| r.starts_with("proj/shop")),
                    "{:?}",
                    entry.target
                );
            }
            let blog = all
                .iter()
                .find(|e| {
                    e.target
                        .resources
                        .iter()
                        .any(|r| r.starts_with("proj/blog"))
                })
                .unwrap();
            let refused = service
                .audit_log()
                .get_audit_entry(
                    &shop_auditor.may(use_case::ReadAuditLog).unwrap(),
                    blog.id.as_str(),
                )
                .unwrap_err();
            assert!(
                matches!(refused, ServiceError::NotPermitted(_)),
                "{refused:?}"
            );
        }

        #[test]
        fn a_create_is_decided_on_its_project() {
            let (service, owner) = service();
            let shop_writer = with_policy(
                &owner,
                Role::Reader,
                vec![Statement::allow(
                    &["proj/shop:env/*:flag/*"],
                    &["createFlag"],
                )],
            );
            let post =
                |key: &str| serde_json::from_value(json!({"key": key, "name": key})).unwrap();
            let permit = shop_writer.may(use_case::CreateFlag).unwrap();
            assert!(service
                .flags()
                .create_flag(&permit, "shop", post("g"))
                .is_ok());
            let refused = service
                .flags()
                .create_flag(&permit, "blog", post("g"))
                .unwrap_err();
            assert!(
                matches!(refused, ServiceError::NotPermitted(_)),
                "{refused:?}"
            );
            assert!(service
                .flags()
                .get_flag(&owner.may(use_case::GetFlag).unwrap(), "blog", "g", &[])
                .is_err());
        }
    }
}
