use proptest::prelude::*;
use regex::Regex;

use super::resource::Part;
use super::*;

fn flag(env: &str) -> Resource {
    Resource::project("shop").environment(env).flag("checkout")
}

#[test]
fn deny_wins_over_allow_in_any_order() {
    let allow = Policy::new(
        "a",
        vec![Statement::allow(&["proj/*:env/*:flag/*"], &["*"])],
    );
    let deny = Policy::new(
        "d",
        vec![Statement::deny(
            &["proj/*:env/production:flag/*"],
            &["updateOn"],
        )],
    );
    for policies in [[allow.clone(), deny.clone()], [deny, allow]] {
        let decision = decide(&policies, "updateOn", &flag("production"));
        assert_eq!(decision.reason().map(|r| r.policy), Some("d"));
        assert!(!decision.is_allowed());
        assert!(decide(&policies, "updateRules", &flag("production")).is_allowed());
        assert!(decide(&policies, "updateOn", &flag("test")).is_allowed());
    }
}

#[test]
fn nothing_allowed_without_an_allow() {
    assert_eq!(
        decide(&[], "updateOn", &flag("test")),
        Decision::Denied(None)
    );
    let only_deny = [Policy::new("d", vec![Statement::deny(&["acct"], &["*"])])];
    assert_eq!(
        decide(&only_deny, "updateOn", &flag("test")),
        Decision::Denied(None)
    );
}

#[test]
fn not_resources_and_not_actions_cover_the_rest() {
    let statement = Statement {
        effect: Effect::Allow,
        resources: None,
        not_resources: Some(vec!["proj/*:env/production:flag/*".into()]),
        actions: None,
        not_actions: Some(vec!["delete*".into()]),
    };
    assert!(statement.covers("updateOn", &flag("test")));
    assert!(!statement.covers("updateOn", &flag("production")));
    assert!(!statement.covers("deleteFlag", &flag("test")));
    assert!(statement.covers("createMember", &Resource::member("m")));
}

#[test]
fn tags_qualify_each_part() {
    let tagged_project = Statement::allow(&["proj/*;retail:env/*:flag/*"], &["*"]);
    let retail = Resource::project("shop")
        .with_tags(&["retail".into(), "eu".into()])
        .environment("test")
        .flag("f");
    assert!(tagged_project.covers("updateOn", &retail));
    assert!(!tagged_project.covers("updateOn", &flag("test")));
    let both = Statement::allow(&["proj/*;retail,us:env/*:flag/*"], &["*"]);
    assert!(
        !both.covers("updateOn", &retail),
        "must carry every listed tag"
    );
}

#[test]
fn specifier_syntax() {
    for good in [
        "acct",
        "proj/*",
        "proj/shop:env/prod*:flag/*;beta,checkout",
        "member/*:token/*",
        "role/*",
        "team/platform",
        "webhook/0123",
    ] {
        assert_eq!(check_specifier(good), Ok(()), "{good}");
    }
    for bad in [
        "",
        "proj",
        "acct/x",
        "proj/shop:",
        "proj/shop:env",
        "proj/shop;",
        "proj/shop;a,,b",
        "flags/*",
        "proj/sh op",
        "proj/{tier:gold}",
    ] {
        assert!(check_specifier(bad).is_err(), "{bad}");
    }
    assert!(check_specifier(&format!("proj/{}", "a".repeat(600))).is_err());
    let pattern = Regex::new(SPECIFIER_PATTERN).unwrap();
    // A name's globs are bounded: each costs a search at every decision.
    let globs = |n: usize| format!("proj/{}:env/*", "*a".repeat(n));
    assert_eq!(check_specifier(&globs(MAX_NAME_GLOBS)), Ok(()));
    assert!(pattern.is_match(&globs(MAX_NAME_GLOBS)));
    let refused = check_specifier(&globs(MAX_NAME_GLOBS + 1)).unwrap_err();
    assert!(refused.contains("at most 8 '*'"), "{refused}");
    assert!(!pattern.is_match(&globs(MAX_NAME_GLOBS + 1)));
    for good in [
        "acct",
        "proj/shop:env/prod*:flag/*;beta,checkout",
        "member/a@b.c:token/*",
    ] {
        assert!(pattern.is_match(good), "{good}");
        assert_eq!(check_specifier(good), Ok(()), "{good}");
    }
    for bad in [
        "",
        "proj",
        "acct/x",
        "proj/shop:",
        "proj/shop;",
        "proj/shop;a,,b",
        "flags/*",
        "proj/sh op",
    ] {
        assert!(!pattern.is_match(bad), "{bad}");
    }
}

#[test]
fn a_policy_statement_names_known_actions_and_valid_resources() {
    let check = |s: &Statement| {
        let mut errors = Vec::new();
        s.validate("policy[0]", &mut errors);
        errors
            .iter()
            .map(|e| format!("{}: {}", e.attribute, e.reason))
            .collect::<Vec<_>>()
    };
    assert!(check(&Statement::allow(&["proj/*:env/*:flag/*"], &["update*"])).is_empty());
    assert!(check(&Statement::allow(&["proj/*"], &["*"])).is_empty());
    let errors = check(&Statement::allow(&["project/*"], &["updatOn", "zz*"]));
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].contains("policy[0].resources[0]"), "{errors:?}");
    let empty = check(&Statement {
        effect: Effect::Allow,
        resources: Some(vec![]),
        not_resources: None,
        actions: Some(vec![]),
        not_actions: None,
    });
    assert_eq!(empty.len(), 2, "{empty:?}");
    let neither = check(&Statement {
        effect: Effect::Deny,
        resources: None,
        not_resources: None,
        actions: None,
        not_actions: None,
    });
    assert_eq!(neither.len(), 1, "{neither:?}");
}

/// The built-in roles' policies allow exactly what the permission table of `domain::role`
/// says each role may do.
#[test]
fn base_role_policies_agree_with_the_permission_table() {
    use crate::role::{Action, Role};
    use actions::ResourceKind as K;
    let sample = |kind: K| match kind {
        K::Account => Resource::account(),
        K::Project => Resource::project("shop"),
        K::Environment => Resource::project("shop").environment("production"),
        K::Flag => Resource::project("shop")
            .environment("production")
            .flag("f"),
        K::Segment => Resource::project("shop").environment("test").segment("s"),
        K::Member => Resource::member("0123"),
        K::Token => Resource::member("0123").token("ci"),
        K::Webhook => Resource::webhook("0123"),
        K::Role => Resource::role("ops"),
        K::Team => Resource::team("platform"),
    };
    let covered_by = |action: Action| -> Vec<&'static actions::ActionInfo> {
        let kind = |kinds: &[K]| {
            actions::ALL
                .iter()
                .filter(|a| kinds.contains(&a.kind) && !a.name.starts_with("view"))
                .collect::<Vec<_>>()
        };
        let named = |names: &[&str]| {
            actions::ALL
                .iter()
                .filter(|a| names.contains(&a.name))
                .collect::<Vec<_>>()
        };
        match action {
            Action::ViewResources => named(&["viewProject", "viewAuditLog"]),
            Action::ManageProjects => kind(&[K::Project]),
            Action::ManageEnvironments => kind(&[K::Environment]),
            Action::ManageFlags => kind(&[K::Flag]),
            Action::ManageSegments => kind(&[K::Segment]),
            Action::ManageTokens => actions::of_kind(K::Token).collect(),
            Action::ManageWebhooks => actions::of_kind(K::Webhook).collect(),
            Action::ViewMembers => named(&["viewMembers", "viewRoles", "viewTeams"]),
            Action::ManageMembers => kind(&[K::Member, K::Role, K::Team]),
            Action::TransferOwnership => named(&["transferOwnership"]),
        }
    };
    let mut checked = std::collections::HashSet::new();
    for role in Role::ALL {
        let policies = [base_role_policy(role)];
        for action in Action::ALL {
            for info in covered_by(action) {
                checked.insert((info.name, info.kind));
                let decision = decide(&policies, info.name, &sample(info.kind));
                assert_eq!(
                    decision.is_allowed(),
                    role.can(action),
                    "{role} {} on {} ({action:?})",
                    info.name,
                    info.kind
                );
            }
        }
    }
    let unchecked: Vec<_> = actions::ALL
        .iter()
        .filter(|a| !checked.contains(&(a.name, a.kind)))
        .map(|a| (a.name, a.kind))
        .collect();
    assert!(
        unchecked.is_empty(),
        "actions the table does not say: {unchecked:?}"
    );
}

/// A reference evaluator written differently: each specifier becomes one regular expression
/// over the whole resource text (`*` = `[^:]*`), tags are checked part by part, and every
/// matching statement is collected before deciding.
fn naive(policies: &[Policy], action: &str, resource: &[(String, Vec<String>)]) -> (bool, usize) {
    let text = resource
        .iter()
        .map(|(t, _)| t.as_str())
        .collect::<Vec<_>>()
        .join(":");
    let glob_regex = |pattern: &str, star: &str| {
        let escaped: Vec<String> = pattern.split('*').map(regex::escape).collect();
        Regex::new(&format!("^{}$", escaped.join(star))).unwrap()
    };
    let spec_matches = |spec: &str| {
        let parts: Vec<&str> = spec.split(':').collect();
        if parts.len() != resource.len() {
            return false;
        }
        let without_tags: Vec<&str> = parts.iter().map(|p| p.split(';').next().unwrap()).collect();
        if !glob_regex(&without_tags.join(":"), "[^:]*").is_match(&text) {
            return false;
        }
        parts
            .iter()
            .zip(resource)
            .all(|(p, (_, tags))| match p.split_once(';') {
                None => true,
                Some((_, wanted)) => wanted.split(',').all(|w| tags.iter().any(|t| t == w)),
            })
    };
    let action_matches = |a: &str| glob_regex(a, ".*").is_match(action);
    let mut matched = Vec::new();
    for (p, policy) in policies.iter().enumerate() {
        for (s, st) in policy.statements().iter().enumerate() {
            let r = match (&st.resources, &st.not_resources) {
                (Some(rs), _) => rs.iter().any(|r| spec_matches(r)),
                (None, Some(rs)) => !rs.iter().any(|r| spec_matches(r)),
                (None, None) => false,
            };
            let a = match (&st.actions, &st.not_actions) {
                (Some(a), _) => a.iter().any(|a| action_matches(a)),
                (None, Some(a)) => !a.iter().any(|a| action_matches(a)),
                (None, None) => true,
            };
            if r && a {
                matched.push((p * 1000 + s, st.effect));
            }
        }
    }
    let first = |effect| matched.iter().find(|(_, e)| *e == effect).map(|(i, _)| *i);
    match (first(Effect::Deny), first(Effect::Allow)) {
        (Some(deny), _) => (false, deny),
        (None, Some(allow)) => (true, allow),
        (None, None) => (false, usize::MAX),
    }
}

fn name_pattern() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "ab", "*", "a*", "*b", "*a*"]).prop_map(str::to_owned)
}

fn tags() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop::sample::select(vec!["x", "y"]).prop_map(str::to_owned),
        0..=2,
    )
}

fn specifier() -> impl Strategy<Value = String> {
    // Only the last part carries tags.
    let part = |kind: &'static str| {
        (name_pattern(), tags()).prop_map(move |(name, tags)| {
            if tags.is_empty() {
                format!("{kind}/{name}")
            } else {
                format!("{kind}/{name};{}", tags.join(","))
            }
        })
    };
    let parent = |kind: &'static str| name_pattern().prop_map(move |name| format!("{kind}/{name}"));
    prop_oneof![
        part("proj"),
        (parent("proj"), part("env")).prop_map(|(p, e)| format!("{p}:{e}")),
        (parent("proj"), parent("env"), part("flag")).prop_map(|(p, e, f)| format!("{p}:{e}:{f}")),
        (parent("proj"), parent("env"), part("segment"))
            .prop_map(|(p, e, s)| format!("{p}:{e}:{s}")),
        Just("acct".to_owned()),
    ]
}

fn action_pattern() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "updateOn",
        "updateRules",
        "createFlag",
        "update*",
        "*",
        "*Flag",
        "viewProject",
    ])
    .prop_map(str::to_owned)
}

fn statement() -> impl Strategy<Value = Statement> {
    let list = |s: BoxedStrategy<String>| prop::collection::vec(s, 1..=3);
    (
        prop::bool::ANY,
        prop::bool::ANY,
        list(specifier().boxed()),
        prop::option::of((prop::bool::ANY, list(action_pattern().boxed()))),
    )
        .prop_map(|(allow, negate_resources, specs, actions)| Statement {
            effect: if allow { Effect::Allow } else { Effect::Deny },
            resources: (!negate_resources).then(|| specs.clone()),
            not_resources: negate_resources.then_some(specs),
            actions: actions
                .clone()
                .filter(|(negate, _)| !negate)
                .map(|(_, a)| a),
            not_actions: actions.filter(|(negate, _)| *negate).map(|(_, a)| a),
        })
}

fn resource() -> impl Strategy<Value = Vec<(String, Vec<String>)>> {
    let name = || prop::sample::select(vec!["a", "b", "ab", "ba"]);
    let part = move |kind: &'static str| {
        (name(), tags()).prop_map(move |(n, t)| (format!("{kind}/{n}"), t))
    };
    prop_oneof![
        part("proj").prop_map(|p| vec![p]),
        (part("proj"), part("env")).prop_map(|(p, e)| vec![p, e]),
        (part("proj"), part("env"), part("flag")).prop_map(|(p, e, f)| vec![p, e, f]),
        (part("proj"), part("env"), part("segment")).prop_map(|(p, e, s)| vec![p, e, s]),
        Just(vec![("acct".to_owned(), vec![])]),
    ]
}

/// Policies `role-0`, `role-1`, ... of the generated statements.
fn named(statements: Vec<Vec<Statement>>) -> Vec<Policy> {
    statements
        .into_iter()
        .enumerate()
        .map(|(i, statements)| Policy::new(format!("role-{i}"), statements))
        .collect()
}

fn build(parts: &[(String, Vec<String>)]) -> Resource {
    Resource {
        parts: parts
            .iter()
            .map(|(text, tags)| Part {
                text: text.clone(),
                tags: tags.clone(),
            })
            .collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn decide_agrees_with_a_naive_evaluator(
        policies in prop::collection::vec(prop::collection::vec(statement(), 0..=4), 0..=4),
        action in prop::sample::select(vec!["updateOn", "updateRules", "createFlag", "deleteFlag", "viewProject"]),
        parts in resource(),
    ) {
        let policies = named(policies);
        let decision = decide(&policies, action, &build(&parts));
        let (allowed, at) = naive(&policies, action, &parts);
        prop_assert_eq!(decision.is_allowed(), allowed);
        let reason_at = decision.reason().map(|reason| {
            let p = policies.iter().position(|p| p.name == reason.policy).unwrap();
            let s = policies[p]
                .statements()
                .iter()
                .position(|s| std::ptr::eq(s, reason.statement))
                .unwrap();
            p * 1000 + s
        });
        prop_assert_eq!(reason_at.unwrap_or(usize::MAX), at);
    }

    #[test]
    fn decide_each_agrees_with_decide(
        policies in prop::collection::vec(prop::collection::vec(statement(), 0..=4), 0..=4),
        parts in resource(),
    ) {
        let policies = named(policies);
        let resource = build(&parts);
        let actions = ["updateOn", "updateRules", "createFlag", "deleteFlag", "viewProject"];
        let each = decide_each(&policies, &actions, &resource);
        for (action, decision) in actions.iter().zip(&each) {
            prop_assert_eq!(decision, &decide(&policies, action, &resource), "{}", action);
        }
    }

    #[test]
    fn decide_in_environments_agrees_with_decide(
        policies in prop::collection::vec(prop::collection::vec(statement(), 0..=4), 0..=4),
        action in prop::sample::select(vec!["updateOn", "updateRules", "createFlag", "deleteFlag", "viewProject"]),
        parts in resource(),
        env_tags in tags(),
    ) {
        let policies = named(policies);
        let mut parts = parts;
        if parts.len() >= 2 {
            parts[1] = ("env/*".to_owned(), env_tags);
        }
        let resource = build(&parts);
        let environments = ["*", "a", "b", "ab", "ba"];
        let decided = decide_in_environments(&policies, action, &resource, &environments);
        for (env, decision) in environments.iter().zip(&decided) {
            let there = resource.in_environment(env).unwrap_or_else(|| resource.clone());
            prop_assert_eq!(decision, &decide(&policies, action, &there), "{}", env);
        }
    }

    #[test]
    fn every_generated_specifier_is_valid(spec in specifier()) {
        prop_assert_eq!(check_specifier(&spec), Ok(()));
        prop_assert!(Regex::new(SPECIFIER_PATTERN).unwrap().is_match(&spec));
    }

    /// The published pattern and the checker agree on arbitrary text of the specifier alphabet.
    #[test]
    fn the_pattern_and_the_checker_agree(spec in "[a-z/;:,*.]{0,24}") {
        let by_pattern = Regex::new(SPECIFIER_PATTERN).unwrap().is_match(&spec);
        prop_assert_eq!(by_pattern, check_specifier(&spec).is_ok(), "{}", spec);
    }
}

/// A resource of `kind`, as the actions of that kind are decided on.
fn sample(kind: actions::ResourceKind) -> Resource {
    use actions::ResourceKind as K;
    match kind {
        K::Account => Resource::account(),
        K::Project => Resource::project("shop"),
        K::Environment => Resource::project("shop").environment("production"),
        K::Flag => flag("production"),
        K::Segment => Resource::project("shop")
            .environment("production")
            .segment("beta"),
        K::Member => Resource::member("m"),
        K::Token => Resource::member("m").token("t"),
        K::Webhook => Resource::webhook("w"),
        K::Role => Resource::role("r"),
        K::Team => Resource::team("t"),
    }
}

#[test]
fn the_built_in_policies_are_the_permission_table_in_the_catalogues_words() {
    use crate::role::{Action, Grant, Role};
    let covers = |action: Action, info: &actions::ActionInfo| match action.grants() {
        Grant::Only(list) => list.contains(&(info.name, info.kind)),
        Grant::Every(kinds) => kinds.contains(&info.kind),
    };
    for action in Action::ALL {
        if let Grant::Only(list) = action.grants() {
            for (name, kind) in list {
                assert!(actions::find(name, *kind).is_some(), "{name} is no action");
            }
        }
    }
    for info in actions::ALL {
        assert!(
            Action::ALL.iter().any(|action| covers(*action, info)),
            "{} on {} belongs to no action of the permission table",
            info.name,
            info.kind
        );
        // A role's policy allows exactly what the actions of the table it may do cover.
        for role in Role::ALL {
            let covered = Action::ALL
                .iter()
                .any(|action| role.can(*action) && covers(*action, info));
            assert_eq!(
                decide(&[base_role_policy(role)], info.name, &sample(info.kind)).is_allowed(),
                covered,
                "{role} {} on {}",
                info.name,
                info.kind
            );
        }
    }
}

#[test]
fn the_built_in_policies_keep_their_statements() {
    use crate::role::Role;
    let reads = [
        ("proj/*", "viewProject"),
        ("acct", "viewAuditLog"),
        ("member/*", "viewMembers"),
        ("role/*", "viewRoles"),
        ("team/*", "viewTeams"),
    ]
    .map(|(spec, action)| Statement::allow(&[spec], &[action]));
    let projects = [
        "proj/*",
        "proj/*:env/*",
        "proj/*:env/*:flag/*",
        "proj/*:env/*:segment/*",
    ];
    let with = |more: &[&str]| {
        let mut all = reads.to_vec();
        all.push(Statement::allow(&[&projects[..], more].concat(), &["*"]));
        all
    };
    let every: Vec<&str> = actions::ResourceKind::ALL
        .iter()
        .map(|kind| kind.specifier())
        .collect();
    let expected = [
        (Role::NoAccess, vec![]),
        (Role::Reader, reads.to_vec()),
        (Role::Writer, with(&[])),
        (
            Role::Admin,
            with(&[
                "member/*",
                "member/*:token/*",
                "webhook/*",
                "role/*",
                "team/*",
            ]),
        ),
        (Role::Owner, vec![Statement::allow(&every, &["*"])]),
    ];
    for (role, statements) in expected {
        assert_eq!(base_role_policy(role).statements(), statements, "{role}");
    }
}

/// What each action of the permission table admitted to before it was derived from
/// [`crate::role::Action::grants`] (kept to show that deriving it changed nothing).
fn admitted_before(permission: crate::role::Action, a: &actions::ActionInfo) -> bool {
    use crate::role::Action as P;
    use actions::ResourceKind::*;
    let view = a.name.starts_with("view");
    match permission {
        P::ViewResources => matches!(a.name, "viewProject" | "viewAuditLog"),
        P::ViewMembers => matches!(a.name, "viewMembers" | "viewRoles" | "viewTeams"),
        P::ManageProjects => a.kind == Project && !view,
        P::ManageEnvironments => a.kind == Environment,
        P::ManageFlags => a.kind == Flag,
        P::ManageSegments => a.kind == Segment,
        P::ManageTokens => a.kind == Token,
        P::ManageWebhooks => a.kind == Webhook,
        P::ManageMembers => matches!(a.kind, Member | Role | Team) && !view,
        P::TransferOwnership => a.name == "transferOwnership",
    }
}

#[test]
fn each_action_of_the_table_admits_what_it_always_did() {
    for permission in crate::role::Action::ALL {
        let derived: Vec<&str> = permission.catalogue_actions().map(|a| a.name).collect();
        let before: Vec<&str> = actions::ALL
            .iter()
            .filter(|a| admitted_before(permission, a))
            .map(|a| a.name)
            .collect();
        assert_eq!(derived, before, "{permission:?}");
    }
}
