//! The storage port's contract, written once against `ports` and run on both engines.

use std::collections::BTreeMap;

use domain::environment::{Environment, EnvironmentCredentials, EnvironmentPost};
use domain::flag::{Flag, FlagConfig, NewFlag};
use domain::id::{EnvironmentId, MemberId, ProjectId, TokenId};
use domain::key::{EnvironmentKey, FlagKey, InvalidKey, ProjectKey};
use domain::member::Member;
use domain::project::{Project, ProjectPost};
use domain::query::{EnvironmentQuery, FlagQuery, Page, ProjectQuery};
use domain::role::Role;
use domain::token::{EnvironmentCredential, Token};
use domain::SequentialIds;
use ports::{
    ConsoleSession, KeyedFlagConfig, Listed, Locked, Repository, SdkKeyHolder, StoreError,
    StoreExt, TokenMatch,
};

use crate::common::{open, Backend, Db};

fn hex_id(n: u64) -> String {
    format!("{n:024x}")
}

/// A key of the kind `K` given as text.
fn key<K>(parse: fn(&str) -> std::result::Result<K, InvalidKey>, text: &str) -> K {
    parse(text).unwrap()
}

fn project(key: &str, n: u64, tags: &[&str]) -> Project {
    let post = ProjectPost {
        key: key.into(),
        name: format!("Project {key}"),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        ..Default::default()
    };
    Project::create(
        post.validate().unwrap().project,
        ProjectId::parse(&hex_id(n)).unwrap(),
        i64::try_from(n).unwrap(),
    )
}

fn environment(key: &str, n: u64) -> Environment {
    let post = EnvironmentPost {
        key: key.into(),
        name: key.to_uppercase(),
        color: "000000".into(),
        ..Default::default()
    };
    let creds = EnvironmentCredentials {
        id: EnvironmentId::parse(&hex_id(1000 + n)).unwrap(),
        api_key: format!("sdk-{key}-{n}"),
        mobile_key: format!("mob-{key}-{n}"),
    };
    Environment::create(post.validate().unwrap(), creds, i64::try_from(n).unwrap())
}

fn flag_in(envs: &[&Environment], key: &str, now: i64) -> Flag {
    let mut ids = SequentialIds::default();
    let mut flag = Flag::create(
        NewFlag::boolean(FlagKey::parse(key).unwrap(), key),
        now,
        &mut ids,
    )
    .unwrap();
    for env in envs {
        let config = flag.new_config(&env.name, now, &mut ids);
        flag.environments.insert(env.key.to_string(), config);
    }
    flag
}

type Result<T> = std::result::Result<T, StoreError>;

/// An admin token `_id` `n` of `member_id`, named `name`.
fn admin_token(n: u64, member_id: &MemberId, name: &str) -> Token {
    Token {
        id: TokenId::parse(&hex_id(n)).unwrap(),
        member_id: member_id.clone(),
        name: name.into(),
        description: String::new(),
        role: Role::Admin,
        service_token: false,
        default_api_version: 20240415,
        creation_date: 1,
        last_modified: 1,
        last_used: None,
        ending: "abcd".into(),
        custom_role_ids: Vec::new(),
        inline_role: Vec::new(),
    }
}

fn projects_round_trip_and_filter(backend: Backend) {
    let db = open(backend);
    let store = &db.store;
    store
        .write_tx(|repo| -> Result<()> {
            repo.insert_project(&project("alpha", 1, &["a", "b"]))?;
            repo.insert_project(&project("beta", 2, &["b"]))?;
            Ok(())
        })
        .unwrap();
    let duplicate =
        store.write_tx(|repo| -> Result<()> { repo.insert_project(&project("alpha", 3, &[])) });
    assert!(
        matches!(duplicate, Err(StoreError::Duplicate(_))),
        "{duplicate:?}"
    );

    let loaded = store
        .read_tx(|repo| -> Result<_> { repo.get_project(&key(ProjectKey::parse, "alpha")) })
        .unwrap()
        .unwrap();
    assert_eq!(loaded, project("alpha", 1, &["a", "b"]));
    let query =
        ProjectQuery::parse(Some("tags:b,query:project"), Some("-name"), None, None).unwrap();
    let Listed { items, total } = store
        .read_tx(|repo| -> Result<_> { repo.list_projects(&query) })
        .unwrap();
    assert_eq!(total, 2);
    assert_eq!(
        items.iter().map(|p| p.key.as_str()).collect::<Vec<_>>(),
        ["beta", "alpha"]
    );
    let underscore = ProjectQuery::parse(Some("query:a_b"), None, None, None).unwrap();
    assert_eq!(
        store
            .read_tx(|repo| -> Result<_> { repo.list_projects(&underscore) })
            .unwrap()
            .total,
        0,
        "LIKE wildcards are escaped"
    );
    // A query built directly (not parsed, so not lower-cased): matched whatever its case.
    let mut upper = ProjectQuery::parse(None, None, None, None).unwrap();
    upper.query = Some("ALPHA".into());
    let Listed { items, .. } = store
        .read_tx(|repo| -> Result<_> { repo.list_projects(&upper) })
        .unwrap();
    assert_eq!(
        items.iter().map(|p| p.key.as_str()).collect::<Vec<_>>(),
        ["alpha"]
    );
}

fn failed_units_of_work_roll_back(backend: Backend) {
    let db = open(backend);
    #[derive(Debug, PartialEq)]
    enum Outcome {
        ChangedMyMind,
        Store(StoreError),
    }
    impl From<StoreError> for Outcome {
        fn from(err: StoreError) -> Self {
            Outcome::Store(err)
        }
    }
    let result: std::result::Result<(), Outcome> = db.store.write_tx(|repo| {
        repo.insert_project(&project("gone", 1, &["t"]))?;
        Err(Outcome::ChangedMyMind)
    });
    assert_eq!(result, Err(Outcome::ChangedMyMind));
    assert_eq!(
        db.store
            .read_tx(|repo| -> Result<_> { repo.get_project(&key(ProjectKey::parse, "gone")) })
            .unwrap(),
        None
    );
    // A failure half-way through a multi-row write leaves nothing either.
    let p = project("p", 2, &[]);
    let env = environment("prod", 1);
    let result = db.store.write_tx(|repo| -> Result<()> {
        repo.insert_project(&p)?;
        repo.insert_environment(&p.id, &env)?;
        repo.insert_environment(&p.id, &env)
    });
    assert!(matches!(result, Err(StoreError::Duplicate(_))));
    assert_eq!(
        db.store
            .read_tx(|repo| -> Result<_> { repo.get_project(&key(ProjectKey::parse, "p")) })
            .unwrap(),
        None
    );
}

/// Flag `f` of project `p`, read by the project's `_id`.
fn flag_f(db: &Db, p: &Project) -> Option<Flag> {
    db.store
        .read_tx(|repo| -> Result<_> { repo.get_flag(&p.id, &key(FlagKey::parse, "f")) })
        .unwrap()
}

/// Flag `flag` of project `project`, by the one-query read by keys.
fn find_flag(db: &Db, project: &str, flag: &str) -> Option<Flag> {
    db.store
        .read_tx(|repo| -> Result<_> {
            repo.find_flag(&key(ProjectKey::parse, project), &key(FlagKey::parse, flag))
        })
        .unwrap()
}

/// Inserts `env` into project `p` with a configuration for every flag (`p` has one flag), as
/// creating an environment does.
fn insert_environment_with_flag_configs(db: &Db, p: &Project, env: &Environment) {
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_environment(&p.id, env)?;
            let defaults = repo.flag_defaults(&p.id)?;
            assert_eq!(defaults.len(), 1);
            let mut ids = SequentialIds::default();
            let configs: Vec<KeyedFlagConfig> = defaults
                .into_iter()
                .map(|d| KeyedFlagConfig {
                    flag_key: d.flag_key,
                    config: FlagConfig::new(d.defaults, &env.name, 11, &mut ids),
                })
                .collect();
            repo.insert_flag_configs(&p.id, &env.key, &configs)
        })
        .unwrap();
}

fn environments_and_flag_configs(backend: Backend) {
    let db = open(backend);
    let p = project("p", 1, &[]);
    let test = environment("test", 1);
    let prod = environment("prod", 2);
    let flag = flag_in(&[&test, &prod], "f", 10);
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_project(&p)?;
            repo.insert_environment(&p.id, &test)?;
            repo.insert_environment(&p.id, &prod)?;
            repo.insert_flag(&p.id, &flag)
        })
        .unwrap();
    let query = EnvironmentQuery::parse(Some("query:PRO"), None, None, None, None).unwrap();
    let Listed { items: envs, total } = db
        .store
        .read_tx(|repo| -> Result<_> { repo.list_environments(&p.id, &query) })
        .unwrap();
    assert_eq!((envs, total), (vec![prod.clone()], 1));

    let stored = flag_f(&db, &p).unwrap();
    assert_eq!(stored, flag);

    // The one-query read by keys sees the same flag.
    let found = find_flag(&db, "p", "f").unwrap();
    assert_eq!(found.environments, flag.environments);
    assert_eq!(found.version, flag.version);
    assert_eq!(find_flag(&db, "p", "g"), None);
    assert_eq!(find_flag(&db, "q", "f"), None);

    // A new environment gets configurations for every flag.
    let staging = environment("staging", 3);
    insert_environment_with_flag_configs(&db, &p, &staging);
    let stored = flag_f(&db, &p).unwrap();
    assert_eq!(
        stored.environments.keys().collect::<Vec<_>>(),
        ["prod", "staging", "test"]
    );
    assert_eq!(stored.environments["staging"].environment_name, "STAGING");

    // Update writes the flag and the named configurations.
    let mut next = stored.clone();
    next.name = "Renamed".into();
    next.environments.get_mut("prod").unwrap().on = true;
    next.settle_change(&stored, 20);
    db.store
        .write_tx(|repo| -> Result<()> {
            let mut held = repo.lock_flag(&p.id, &key(FlagKey::parse, "f"))?.unwrap();
            let previous = held.replace(next.clone());
            repo.update_flag(&p.id, &held, &previous)
        })
        .unwrap();
    let reloaded = flag_f(&db, &p).unwrap();
    assert_eq!(reloaded.name, "Renamed");
    assert!(reloaded.environments["prod"].on);
    assert_eq!(reloaded.version, stored.version + 1);

    // Listing with configurations of chosen environments only.
    let query = FlagQuery::parse(
        Some("query:f"),
        None,
        None,
        Some(Page {
            limit: 10,
            offset: 0,
        }),
    )
    .unwrap();
    let Listed {
        items: flags,
        total,
    } = db
        .store
        .read_tx(|repo| -> Result<_> { repo.list_flags(&p.id, &query, &["test".to_owned()]) })
        .unwrap();
    assert_eq!(total, 1);
    assert_eq!(flags[0].environments.keys().collect::<Vec<_>>(), ["test"]);

    // Deleting an environment removes its configurations; deleting the project removes all.
    db.store
        .write_tx(|repo| -> Result<()> {
            let held = repo
                .lock_environment(&p.id, &key(EnvironmentKey::parse, "test"))?
                .unwrap();
            repo.delete_environment(&p.id, &held)
        })
        .unwrap();
    let stored = flag_f(&db, &p).unwrap();
    assert!(!stored.environments.contains_key("test"));
    db.store
        .write_tx(|repo| -> Result<()> {
            let held = repo.lock_project(&p.key)?.unwrap();
            repo.delete_project(&held)
        })
        .unwrap();
    assert_eq!(flag_f(&db, &p), None);
    assert_eq!(
        db.store
            .read_tx(|repo| -> Result<_> { repo.environments_of(std::slice::from_ref(&p.id)) })
            .unwrap(),
        vec![]
    );
}

fn flags_of_a_project_without_environments(backend: Backend) {
    let db = open(backend);
    let p = project("bare", 1, &[]);
    let flag = flag_in(&[], "f", 1);
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_project(&p)?;
            repo.insert_flag(&p.id, &flag)
        })
        .unwrap();
    let found = db
        .store
        .read_tx(|repo| -> Result<_> {
            repo.find_flag(&key(ProjectKey::parse, "bare"), &key(FlagKey::parse, "f"))
        })
        .unwrap()
        .unwrap();
    assert!(found.environments.is_empty());
    assert_eq!(found.key, "f");
}

fn tokens_and_credentials(backend: Backend) {
    let db = open(backend);
    let owner = Member::owner(
        MemberId::parse(&hex_id(1)).unwrap(),
        "o@example.com".into(),
        1,
    );
    let token = admin_token(2, &owner.id, "t");
    let p = project("p", 1, &[]);
    let env = environment("prod", 1);
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_member(&owner)?;
            repo.insert_token(&token, "hash")?;
            repo.insert_project(&p)?;
            repo.insert_environment(&p.id, &env)
        })
        .unwrap();
    let found = db
        .store
        .read_tx(|repo| -> Result<_> { repo.find_token_by_hash("hash", 0) })
        .unwrap();
    assert_eq!(
        found,
        Some(TokenMatch {
            token: token.clone(),
            member: owner.clone(),
            previous_secret_expires_at: None
        })
    );
    assert_eq!(
        db.store
            .read_tx(|repo| -> Result<_> { repo.find_owner() })
            .unwrap(),
        Some(owner.clone())
    );
    let Listed {
        items: tokens,
        total,
    } = db
        .store
        .read_tx(|repo| -> Result<_> {
            repo.list_tokens(
                Some(&owner.id),
                Page {
                    limit: 25,
                    offset: 0,
                },
            )
        })
        .unwrap();
    assert_eq!((tokens.len(), total), (1, 1));
    let kinds: BTreeMap<&str, Option<EnvironmentCredential>> = [
        ("sdk", env.api_key.as_str()),
        ("mob", env.mobile_key.as_str()),
        ("id", env.id.as_str()),
        ("none", "nothing"),
    ]
    .into_iter()
    .map(|(name, secret)| {
        (
            name,
            db.store
                .read_tx(|repo| -> Result<_> { repo.find_environment_credential(secret) })
                .unwrap(),
        )
    })
    .collect();
    assert_eq!(kinds["sdk"], Some(EnvironmentCredential::SdkKey));
    assert_eq!(kinds["mob"], Some(EnvironmentCredential::MobileKey));
    assert_eq!(kinds["id"], Some(EnvironmentCredential::ClientSideId));
    assert_eq!(kinds["none"], None);
    db.store
        .write_tx(|repo| -> Result<_> {
            let held = repo.lock_token(&token.id)?.unwrap();
            repo.delete_token(&held)
        })
        .unwrap();
    assert_eq!(
        db.store
            .write_tx(|repo| -> Result<_> { repo.lock_token(&token.id) })
            .unwrap(),
        None
    );
}

/// The environment an SDK key opens: the current one, or one replaced (with its expiry); never
/// a mobile key or the client-side ID.
fn sdk_keys_open_their_environment(backend: Backend) {
    let db = open(backend);
    let p = project("p", 1, &[]);
    let env = environment("prod", 1);
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_project(&p)?;
            repo.insert_environment(&p.id, &env)
        })
        .unwrap();
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.retire_environment_key(&env.id, "sdk-old", EnvironmentCredential::SdkKey, 5_000)?;
            repo.retire_environment_key(&env.id, "mob-old", EnvironmentCredential::MobileKey, 5_000)
        })
        .unwrap();
    let opens = |secret: &str| {
        db.store
            .read_tx(|repo| -> Result<_> { repo.environment_of_sdk_key(secret) })
            .unwrap()
    };
    let holder = |expires_at| SdkKeyHolder {
        project_key: "p".into(),
        environment_key: "prod".into(),
        expires_at,
    };
    assert_eq!(opens(&env.api_key), Some(holder(None)));
    assert_eq!(opens("sdk-old"), Some(holder(Some(5_000))));
    for nothing in [
        env.mobile_key.as_str(),
        env.id.as_str(),
        "mob-old",
        "nothing",
    ] {
        assert_eq!(opens(nothing), None, "{nothing}");
    }
}

/// Several flags of a project locked at once (each once, in key order, those that exist) and
/// saved at once: each flag's row and changed configurations are written, the others untouched.
fn flags_locked_and_saved_together(backend: Backend) {
    let db = open(backend);
    let p = project("p", 1, &[]);
    let test = environment("test", 1);
    let prod = environment("prod", 2);
    let flags: Vec<Flag> = ["c", "a", "b", "d"]
        .iter()
        .map(|k| flag_in(&[&test, &prod], k, 10))
        .collect();
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_project(&p)?;
            repo.insert_environment(&p.id, &test)?;
            repo.insert_environment(&p.id, &prod)?;
            for flag in &flags {
                repo.insert_flag(&p.id, flag)?;
            }
            Ok(())
        })
        .unwrap();
    let project_key = key(ProjectKey::parse, "p");
    let keys =
        |names: &[&str]| -> Vec<FlagKey> { names.iter().map(|k| key(FlagKey::parse, k)).collect() };
    db.store
        .write_tx(|repo| -> Result<()> {
            let (id, locked) = repo
                .lock_flags_by_keys(&project_key, &keys(&["c", "missing", "a", "c", "b"]))?
                .unwrap();
            assert_eq!(id, p.id);
            let locked_keys: Vec<&str> = locked.iter().map(|f| f.key.as_str()).collect();
            assert_eq!(locked_keys, ["a", "b", "c"]);
            let mut saved = Vec::new();
            for mut flag in locked {
                let mut next = (*flag).clone();
                next.name = format!("renamed {}", next.key);
                next.version += 1;
                if next.key.as_str() != "b" {
                    // "b" changes only its row; the others one configuration too.
                    let config = next.environments.get_mut("prod").unwrap();
                    config.on = true;
                    config.version += 1;
                }
                next.tags = vec![format!("tag-{}", next.key)];
                let previous = flag.replace(next);
                saved.push((flag, previous));
            }
            let saved: Vec<(&Locked<Flag>, &Flag)> = saved.iter().map(|(f, p)| (f, p)).collect();
            repo.update_flags(&p.id, &saved)
        })
        .unwrap();
    for flag in &flags {
        let stored = db
            .store
            .read_tx(|repo| -> Result<_> { repo.get_flag(&p.id, &flag.key) })
            .unwrap()
            .unwrap();
        if flag.key.as_str() == "d" {
            assert_eq!(&stored, flag);
            continue;
        }
        assert_eq!(stored.name, format!("renamed {}", flag.key));
        assert_eq!(stored.version, flag.version + 1);
        assert_eq!(stored.tags, vec![format!("tag-{}", flag.key)]);
        assert_eq!(stored.environments["test"], flag.environments["test"]);
        assert_eq!(
            stored.environments["prod"].on,
            flag.key.as_str() != "b",
            "flag {}",
            flag.key
        );
    }
    // None of them, or no such project: nothing.
    let none = db
        .store
        .write_tx(|repo| -> Result<_> {
            Ok((
                repo.lock_flags_by_keys(&project_key, &keys(&["x", "y"]))?
                    .is_none(),
                repo.lock_flags_by_keys(&key(ProjectKey::parse, "q"), &keys(&["a", "b"]))?
                    .is_none(),
            ))
        })
        .unwrap();
    assert_eq!(none, (true, true));
}

/// Flags created together: those whose key is free are stored with their configurations; one
/// whose key is taken (in the project, or earlier in the list) is skipped, and the transaction
/// goes on.
fn new_flags_skip_taken_keys(backend: Backend) {
    let db = open(backend);
    let p = project("p", 1, &[]);
    let test = environment("test", 1);
    let existing = flag_in(&[&test], "taken", 10);
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_project(&p)?;
            repo.insert_environment(&p.id, &test)?;
            repo.insert_flag(&p.id, &existing)
        })
        .unwrap();
    let mut twice = flag_in(&[&test], "new", 20);
    twice.name = "second".into();
    let flags = [
        flag_in(&[&test], "new", 20),
        flag_in(&[&test], "taken", 20),
        twice,
        flag_in(&[&test], "other", 20),
    ];
    let stored = db
        .store
        .write_tx(|repo| -> Result<_> {
            let stored = repo.insert_new_flags(&p.id, &flags.each_ref())?;
            // The transaction is still usable after the skipped ones.
            repo.get_flag(&p.id, &key(FlagKey::parse, "other"))?
                .unwrap();
            Ok(stored)
        })
        .unwrap();
    assert_eq!(stored, [true, false, false, true]);
    for (name, expected) in [
        ("new", &flags[0]),
        ("taken", &existing),
        ("other", &flags[3]),
    ] {
        let got = db
            .store
            .read_tx(|repo| -> Result<_> { repo.get_flag(&p.id, &key(FlagKey::parse, name)) })
            .unwrap()
            .unwrap();
        assert_eq!(&got, expected, "{name}");
    }
}

/// Two transactions creating overlapping keys in opposite orders (two replicas' batches) do not
/// deadlock: the rows are inserted in key order, so the second waits for the first instead of
/// each waiting for the other. The first inserts `x`, then (while the second is under way) `y`;
/// the second is given `[y, x]`. In arrival order the second would insert `y`, then wait for
/// `x`, while the first waits for `y`. Run through `Store::write`, which does not retry, so that
/// a deadlock would be seen.
#[test]
fn new_flags_of_two_transactions_do_not_deadlock() {
    use std::sync::mpsc;
    use std::time::Duration;

    let db = open(Backend::Postgres);
    let p = project("p", 1, &[]);
    let test = environment("test", 1);
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_project(&p)?;
            repo.insert_environment(&p.id, &test)
        })
        .unwrap();
    let (x, y) = (flag_in(&[&test], "x", 10), flag_in(&[&test], "y", 10));
    let (started, go) = mpsc::channel();
    let (first, second) = std::thread::scope(|scope| {
        let first = scope.spawn(|| {
            let mut stored = Vec::new();
            let outcome = db.store.write(&mut |repo| {
                stored.extend(repo.insert_new_flags(&p.id, &[&x])?);
                started.send(()).unwrap();
                // Long enough for the second to be waiting for `x`.
                std::thread::sleep(Duration::from_millis(500));
                stored.extend(repo.insert_new_flags(&p.id, &[&y])?);
                Ok(())
            });
            outcome.map(|()| stored)
        });
        go.recv().unwrap();
        let second = scope.spawn(|| {
            let mut stored = Vec::new();
            let outcome = db.store.write(&mut |repo| {
                stored = repo.insert_new_flags(&p.id, &[&y, &x])?;
                Ok(())
            });
            outcome.map(|()| stored)
        });
        (first.join().unwrap(), second.join().unwrap())
    });
    assert_eq!(first, Ok(vec![true, true]));
    assert_eq!(second, Ok(vec![false, false]));
}

/// Console sessions by the hash of their id: found until they expire, deleted on demand, at most
/// `keep` per token (the oldest go, and the expired ones), and gone with their token.
fn console_sessions_expire_are_capped_and_go_with_their_token(backend: Backend) {
    let db = open(backend);
    let owner = Member::owner(
        MemberId::parse(&hex_id(1)).unwrap(),
        "o@example.com".into(),
        1,
    );
    let (first, second) = (
        admin_token(2, &owner.id, "t2"),
        admin_token(3, &owner.id, "t3"),
    );
    let session = |token: &Token, created_at: i64, expires_at: i64| ConsoleSession {
        token_id: token.id.clone(),
        secret_hash: format!("secret of {}", token.name),
        csrf_token: format!("csrf {created_at}"),
        created_at,
        expires_at,
    };
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_member(&owner)?;
            repo.insert_token(&first, "h2")?;
            repo.insert_token(&second, "h3")?;
            repo.insert_console_session("a", &session(&first, 10, 100), 3, 10)?;
            repo.insert_console_session("b", &session(&first, 20, 1000), 3, 20)?;
            repo.insert_console_session("c", &session(&first, 30, 1000), 3, 30)?;
            repo.insert_console_session("z", &session(&second, 30, 1000), 3, 30)
        })
        .unwrap();
    let find = |id: &str, now: i64| {
        db.store
            .read_tx(|repo| -> Result<_> { repo.find_console_session(id, now) })
            .unwrap()
    };
    assert_eq!(find("a", 99), Some(session(&first, 10, 100)));
    assert_eq!(find("a", 100), None, "expired at expires_at");
    assert_eq!(find("nothing", 0), None);
    // A fourth session of the first token at 200: "a" has expired and goes; b and c stay (3).
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_console_session("d", &session(&first, 200, 1000), 3, 200)
        })
        .unwrap();
    assert_eq!(find("a", 0), None, "an expired session is deleted");
    assert!(find("b", 200).is_some() && find("c", 200).is_some() && find("d", 200).is_some());
    // A fifth: the oldest ("b") goes; the other token's session is untouched.
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_console_session("e", &session(&first, 300, 1000), 3, 300)
        })
        .unwrap();
    assert_eq!(find("b", 300), None, "beyond the newest 3, the oldest goes");
    assert!(find("c", 300).is_some() && find("e", 300).is_some() && find("z", 300).is_some());
    // The same id twice is a duplicate.
    let again = db.store.write_tx(|repo| -> Result<()> {
        repo.insert_console_session("e", &session(&first, 301, 1000), 3, 301)
    });
    assert!(matches!(again, Err(StoreError::Duplicate(_))), "{again:?}");
    db.store
        .write_tx(|repo| -> Result<()> { repo.delete_console_session("c") })
        .unwrap();
    assert_eq!(find("c", 300), None);
    // Deleting the token ends its sessions; the other token's stay.
    db.store
        .write_tx(|repo| -> Result<_> {
            let held = repo.lock_token(&first.id)?.unwrap();
            repo.delete_token(&held)
        })
        .unwrap();
    assert_eq!((find("d", 300), find("e", 300)), (None, None));
    assert!(find("z", 300).is_some());
    // A session of a token that does not exist is refused.
    let orphan = db.store.write_tx(|repo| -> Result<()> {
        repo.insert_console_session("o", &session(&first, 400, 1000), 3, 400)
    });
    assert!(orphan.is_err(), "{orphan:?}");
}

fn _assert_object_safe(_: &mut dyn Repository) {}

storage_on_every_store!(
    projects_round_trip_and_filter,
    flags_of_a_project_without_environments,
    failed_units_of_work_roll_back,
    environments_and_flag_configs,
    flags_locked_and_saved_together,
    new_flags_skip_taken_keys,
    tokens_and_credentials,
    sdk_keys_open_their_environment,
    console_sessions_expire_are_capped_and_go_with_their_token
);
