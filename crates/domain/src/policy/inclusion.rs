//! Whether one set of policies allows everything another allows ([`includes`]): what decides
//! that a caller may give a token no power it lacks itself.
//!
//! Inclusion of policies with globs, `notResources`, `notActions` and tags is decided here
//! *soundly but not completely*: a `true` is a proof, a `false` may be a set that is in fact
//! included but whose inclusion these rules cannot show. A caller is then refused, which is the
//! safe side (the rule is written in `docs/roles.md`).
//!
//! The rules, for sets `outer` and `inner` (each a list of policies of which one allow
//! suffices, deny winning):
//! - every deny statement of `outer` is also, word for word, a deny statement of `inner` (what
//!   `outer` takes away, `inner` takes away too; `inner`'s other denies only narrow it), or it
//!   shares no action or no resource with any allow statement of `inner`;
//! - every allow statement of `inner` is covered by `outer`'s allows: for each action of the
//!   catalogue ([`super::actions::ALL`]) it covers and each resource specifier it names (all
//!   specifiers of every kind, for `notResources`), some allow statement of `outer` covers the
//!   action on every resource the specifier names. A specifier covers another when their parts
//!   line up, each of its name globs matches the other's name (a glob's `*` is covered only by
//!   a `*`), and the other asks for at least its tags; a `notResources` statement covers a
//!   specifier that none of its specifiers can meet.
//!
//! Handwritten: no crate decides containment of these specifier globs.

use super::actions::{self, ResourceKind};
use super::pattern::{compile_specifier, CompiledPart, Glob};
use super::statement::Compiled;
use super::{Effect, Policy, Statement};

/// Whether every request `inner` allows, `outer` allows too (see the module's rules): `false`
/// when that cannot be shown.
///
/// ```
/// use domain::policy::{base_role_policy, includes, Policy, Statement};
/// use domain::role::Role;
/// let admin = [base_role_policy(Role::Admin)];
/// let restricted = [
///     base_role_policy(Role::Admin),
///     Policy::new("inline", vec![Statement::deny(&["proj/*:env/production:flag/*"], &["*"])]),
/// ];
/// assert!(includes(&admin, &restricted), "the restricted set does less");
/// assert!(!includes(&restricted, &admin), "the unrestricted one does what it may not");
/// assert!(includes(&restricted, &restricted));
/// assert!(includes(&admin, &[base_role_policy(Role::Writer)]));
/// assert!(!includes(&[base_role_policy(Role::Writer)], &admin));
/// ```
pub fn includes(outer: &[Policy], inner: &[Policy]) -> bool {
    let inner_denies = statements(inner, Effect::Deny);
    let inner_allows = statements(inner, Effect::Allow);
    let kept = statements(outer, Effect::Deny)
        .iter()
        .all(|(deny, compiled)| {
            inner_denies.iter().any(|(d, _)| d == deny)
                || inner_allows
                    .iter()
                    .all(|(allow, allowed)| apart(compiled, allow, allowed))
        });
    if !kept {
        return false;
    }
    let outer_allows: Vec<Covering<'_>> = statements(outer, Effect::Allow)
        .into_iter()
        .map(|(statement, compiled)| Covering::of(statement, compiled))
        .collect();
    inner_allows.into_iter().all(|(statement, compiled)| {
        outer_allows.iter().any(|b| b.statement == statement)
            || covered(statement, compiled, &outer_allows)
    })
}

/// The statements of `set` with effect `effect`, each with its compiled form.
fn statements(set: &[Policy], effect: Effect) -> Vec<(&Statement, &Compiled)> {
    set.iter()
        .flat_map(|p| p.statements.iter().zip(&p.compiled))
        .filter(|(s, _)| s.effect == effect)
        .collect()
}

/// The resource specifiers statement `compiled` names: all of every kind for `notResources`.
fn named_specifiers(compiled: &Compiled) -> Vec<Vec<CompiledPart>> {
    match &compiled.resources {
        None => Vec::new(),
        Some((false, specs)) => specs.clone(),
        Some((true, _)) => ResourceKind::ALL
            .iter()
            .map(|kind| compile_specifier(kind.specifier()))
            .collect(),
    }
}

/// Whether deny statement `deny` can meet no request allow statement `allow` covers: they share
/// no action of the catalogue (and `allow` names none outside it), or no resource.
fn apart(deny: &Compiled, allow: &Statement, allowed: &Compiled) -> bool {
    let outside = allow
        .actions
        .iter()
        .flatten()
        .any(|a| !a.contains('*') && !actions::ALL.iter().any(|known| known.name == *a));
    let no_common_action = !outside
        && catalogue_actions(deny)
            .iter()
            .zip(catalogue_actions(allowed))
            .all(|(d, a)| !(*d && a));
    let no_common_resource = match &deny.resources {
        None => true,
        Some((true, _)) => false,
        Some((false, denied)) => named_specifiers(allowed)
            .iter()
            .all(|p| denied.iter().all(|q| disjoint(q, p))),
    };
    no_common_action || no_common_resource
}

/// An allow statement of the outer set, with the catalogue's actions it covers.
struct Covering<'p> {
    statement: &'p Statement,
    compiled: &'p Compiled,
    actions: Vec<bool>,
}

impl<'p> Covering<'p> {
    fn of(statement: &'p Statement, compiled: &'p Compiled) -> Self {
        Self {
            statement,
            compiled,
            actions: catalogue_actions(compiled),
        }
    }
}

/// Which actions of the catalogue `compiled` covers, by index in [`actions::ALL`].
fn catalogue_actions(compiled: &Compiled) -> Vec<bool> {
    actions::ALL
        .iter()
        .map(|action| compiled.covers_action(action.name))
        .collect()
}

/// Whether the allows of `outer` cover what allow statement `statement` covers.
fn covered(statement: &Statement, compiled: &Compiled, outer: &[Covering<'_>]) -> bool {
    // An action named outside the catalogue would be decided by name alone: it must be covered
    // by name too.
    let named_outside: Vec<&String> = statement
        .actions
        .iter()
        .flatten()
        .filter(|a| !a.contains('*') && !actions::ALL.iter().any(|known| known.name == *a))
        .collect();
    let wanted = catalogue_actions(compiled);
    let specifiers = named_specifiers(compiled);
    specifiers.iter().all(|spec| {
        let mut have = vec![false; wanted.len()];
        let mut names_covered = named_outside.is_empty();
        for b in outer.iter().filter(|b| resources_cover(b.compiled, spec)) {
            for (h, a) in have.iter_mut().zip(&b.actions) {
                *h |= *a;
            }
            names_covered |= named_outside
                .iter()
                .all(|name| b.compiled.covers_action(name));
        }
        names_covered && wanted.iter().zip(&have).all(|(w, h)| !*w || *h)
    })
}

/// Whether the resources of `outer` (a statement) take in every resource specifier `spec` names.
fn resources_cover(outer: &Compiled, spec: &[CompiledPart]) -> bool {
    match &outer.resources {
        None => false,
        Some((false, specs)) => specs.iter().any(|q| specifier_covers(q, spec)),
        Some((true, specs)) => specs.iter().all(|q| disjoint(q, spec)),
    }
}

/// The text of a part: `kind/name` (or `acct`).
fn text(part: &CompiledPart) -> &str {
    match &part.kind_name {
        Glob::Exact(text) | Glob::Wild(text) => text,
    }
}

fn kind(part: &CompiledPart) -> &str {
    text(part).split('/').next().unwrap_or_default()
}

/// Whether specifier `q` names every resource specifier `p` names. A name is a glob whose
/// literal pieces hold no `*`, so `q` matching `p`'s text (its `*` read as a character) means
/// each `*` of `p` falls inside a stretch one `*` of `q` matches: whatever `p`'s `*` stand for,
/// `q` matches.
fn specifier_covers(q: &[CompiledPart], p: &[CompiledPart]) -> bool {
    q.len() == p.len()
        && q.iter().zip(p).all(|(q, p)| {
            kind(q) == kind(p)
                && q.kind_name.matches(text(p))
                && q.tags.iter().all(|tag| p.tags.contains(tag))
        })
}

/// Whether no resource is named by both `q` and `p`: their parts differ in number or kind, or
/// two names without globs differ.
fn disjoint(q: &[CompiledPart], p: &[CompiledPart]) -> bool {
    q.len() != p.len() || q.iter().zip(p).any(|(q, p)| {
        kind(q) != kind(p)
            || matches!((&q.kind_name, &p.kind_name), (Glob::Exact(a), Glob::Exact(b)) if a != b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{base_role_policy, decide, Resource};
    use crate::role::Role;

    fn set(statements: Vec<Statement>) -> Vec<Policy> {
        vec![Policy::new("r", statements)]
    }

    #[test]
    fn built_in_roles_include_the_roles_below_them() {
        for outer in Role::ALL {
            for inner in Role::ALL {
                assert_eq!(
                    includes(&[base_role_policy(outer)], &[base_role_policy(inner)]),
                    inner <= outer,
                    "{outer} ⊇ {inner}"
                );
            }
        }
    }

    #[test]
    fn a_deny_of_the_outer_set_must_be_kept() {
        let deny = Statement::deny(&["proj/*:env/production:flag/*"], &["*"]);
        let restricted = set(vec![
            Statement::allow(&["proj/*:env/*:flag/*"], &["*"]),
            deny.clone(),
        ]);
        let unrestricted_reader = set(vec![Statement::allow(
            &["proj/*:env/production:flag/*"],
            &["updateOn"],
        )]);
        assert!(!includes(&restricted, &unrestricted_reader));
        // A deny that meets none of the inner set's allows need not be repeated there.
        let mut restricted_admin = vec![base_role_policy(Role::Admin)];
        restricted_admin.extend(restricted.clone());
        assert!(includes(
            &restricted_admin,
            &[base_role_policy(Role::Reader)]
        ));
        assert!(!includes(
            &restricted_admin,
            &[base_role_policy(Role::Writer)]
        ));
        let mut kept = unrestricted_reader.clone();
        kept.push(Policy::new("inline", vec![deny]));
        assert!(includes(&restricted, &kept));
    }

    #[test]
    fn globs_cover_narrower_globs_and_names_only() {
        let outer = set(vec![Statement::allow(
            &["proj/sh*:env/*:flag/*"],
            &["update*"],
        )]);
        let fits = set(vec![Statement::allow(
            &["proj/shop:env/test:flag/a*b"],
            &["updateOn", "updateName"],
        )]);
        assert!(includes(&outer, &fits));
        for wider in [
            Statement::allow(&["proj/*:env/test:flag/x"], &["updateOn"]),
            Statement::allow(&["proj/shop:env/test:flag/x"], &["*"]),
            Statement::allow(&["proj/shop:env/test:flag/x"], &["deleteFlag"]),
            Statement::allow(&["proj/shop:env/test"], &["updateName"]),
        ] {
            assert!(!includes(&outer, &set(vec![wider.clone()])), "{wider:?}");
        }
    }

    #[test]
    fn tags_narrow_and_not_resources_are_decided_by_disjointness() {
        let tagged = set(vec![Statement::allow(
            &["proj/*:env/*:flag/*;beta"],
            &["*"],
        )]);
        let beta_only = set(vec![Statement::allow(
            &["proj/a:env/b:flag/*;beta,x"],
            &["updateOn"],
        )]);
        assert!(includes(&tagged, &beta_only));
        assert!(!includes(
            &tagged,
            &set(vec![Statement::allow(
                &["proj/a:env/b:flag/*"],
                &["updateOn"]
            )])
        ));
        let but_production = set(vec![Statement {
            effect: Effect::Allow,
            resources: None,
            not_resources: Some(vec!["proj/*:env/production:flag/*".into()]),
            actions: Some(vec!["*".into()]),
            not_actions: None,
        }]);
        let on_test = set(vec![Statement::allow(
            &["proj/shop:env/test:flag/*"],
            &["updateOn"],
        )]);
        assert!(includes(&but_production, &on_test));
        let on_any = set(vec![Statement::allow(
            &["proj/shop:env/*:flag/*"],
            &["updateOn"],
        )]);
        assert!(!includes(&but_production, &on_any));
        // An inner `notResources` stands for every resource of every kind.
        assert!(!includes(&on_any, &but_production));
        assert!(includes(&[base_role_policy(Role::Owner)], &but_production));
    }

    /// Whatever `includes` proves, `decide` confirms on a sample of requests.
    #[test]
    fn what_is_proved_included_is_decided_so() {
        let candidates = [
            Statement::allow(&["proj/*:env/*:flag/*"], &["*"]),
            Statement::allow(&["proj/shop:env/*:flag/*"], &["update*"]),
            Statement::allow(&["proj/shop:env/test:flag/*;beta"], &["updateOn"]),
            Statement::deny(&["proj/*:env/production:flag/*"], &["*"]),
            Statement::deny(&["proj/shop:env/*:flag/*"], &["updateOn"]),
            Statement::allow(&["proj/*"], &["viewProject"]),
        ];
        let requests: Vec<(&str, Resource)> = ["updateOn", "updateName", "deleteFlag"]
            .iter()
            .flat_map(|action| {
                ["shop", "blog"].iter().flat_map(move |p| {
                    ["test", "production"].iter().flat_map(move |e| {
                        [vec![], vec!["beta".to_owned()]]
                            .into_iter()
                            .map(move |tags| {
                                let flag = Resource::project(p).environment(e).flag("f");
                                (*action, flag.with_tags(&tags))
                            })
                    })
                })
            })
            .chain([("viewProject", Resource::project("shop"))])
            .collect();
        let subsets: Vec<Vec<Statement>> = (0u32..64)
            .map(|bits| {
                candidates
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| bits & (1 << i) != 0)
                    .map(|(_, s)| s.clone())
                    .collect()
            })
            .collect();
        for outer in &subsets {
            for inner in &subsets {
                let (outer, inner) = (set(outer.clone()), set(inner.clone()));
                if !includes(&outer, &inner) {
                    continue;
                }
                for (action, resource) in &requests {
                    if decide(&inner, action, resource).is_allowed() {
                        assert!(
                            decide(&outer, action, resource).is_allowed(),
                            "{outer:?} ⊇ {inner:?} but not on {action} {resource}"
                        );
                    }
                }
            }
        }
    }
}
