//! Lists longer than an engine's bound-parameter limit (SQLite 32,766; PostgreSQL 65,535): the
//! store writes and reads them in chunks, so whatever the domain's limits allow always works.

use domain::environment::{Environment, EnvironmentCredentials, EnvironmentPost};
use domain::flag::{Flag, NewFlag};
use domain::id::{EnvironmentId, ProjectId};
use domain::key::FlagKey;
use domain::project::{Project, ProjectPost};
use domain::segment::{Segment, SegmentPost};
use domain::SequentialIds;
use ports::{StoreError, StoreExt};

use crate::common::{open, Backend};

type Result<T> = std::result::Result<T, StoreError>;

fn many(prefix: &str, n: usize) -> Vec<String> {
    let mut values: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    values.sort();
    values
}

fn project(key: &str) -> Project {
    let post = ProjectPost {
        key: key.into(),
        name: key.into(),
        ..Default::default()
    };
    Project::create(
        post.validate().unwrap().project,
        ProjectId::parse(&format!("{:024x}", 1)).unwrap(),
        1,
    )
}

fn environment(key: &str) -> Environment {
    let post = EnvironmentPost {
        key: key.into(),
        name: key.into(),
        color: "000000".into(),
        ..Default::default()
    };
    let creds = EnvironmentCredentials {
        id: EnvironmentId::parse(&format!("{:024x}", 2)).unwrap(),
        api_key: format!("sdk-{key}"),
        mobile_key: format!("mob-{key}"),
    };
    Environment::create(post.validate().unwrap(), creds, 1)
}

fn multi_row_inserts_past_the_parameter_limit_are_chunked(backend: Backend) {
    let db = open(backend);
    // Built past the domain's limits on purpose: the store must not be what breaks.
    let mut p = project("p");
    p.tags = many("t", 40_000); // 80,000 parameters
    let env = environment("prod");
    let mut ids = SequentialIds::default();
    let mut flag = Flag::create(
        NewFlag::boolean(FlagKey::parse("f").unwrap(), "f"),
        1,
        &mut ids,
    )
    .unwrap();
    flag.environments
        .insert(env.key.to_string(), flag.new_config(&env.name, 1, &mut ids));
    flag.tags = many("g", 25_000); // 75,000 parameters
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_project(&p)?;
            repo.insert_environment(&p.id, &env)?;
            repo.insert_flag(&p.id, &flag)
        })
        .unwrap();
    let (stored_project, stored_flag) = db
        .store
        .read_tx(|repo| -> Result<_> {
            Ok((
                repo.get_project(&p.key)?,
                repo.get_flag(&p.id, &FlagKey::parse("f").unwrap())?,
            ))
        })
        .unwrap();
    assert_eq!(stored_project.unwrap().tags, p.tags);
    assert_eq!(stored_flag.unwrap().tags, flag.tags);
}

fn lookups_by_long_key_lists_are_chunked(backend: Backend) {
    let db = open(backend);
    let p = project("p");
    let env = environment("prod");
    let segment = |key: &str| {
        let post = SegmentPost {
            key: key.into(),
            name: key.into(),
            ..Default::default()
        };
        Segment::create(post, 1, &mut domain::SequentialIds::default()).unwrap()
    };
    db.store
        .write_tx(|repo| -> Result<()> {
            repo.insert_project(&p)?;
            repo.insert_environment(&p.id, &env)?;
            repo.insert_segment(&p.id, &env.key, &segment("s1"))?;
            repo.insert_segment(&p.id, &env.key, &segment("s69999"))
        })
        .unwrap();
    let keys: Vec<String> = (0..70_000).map(|i| format!("s{i}")).collect();
    let mut found = db
        .store
        .read_tx(|repo| -> Result<_> { repo.existing_segments(&p.id, &env.key, &keys) })
        .unwrap();
    found.sort();
    assert_eq!(found, ["s1", "s69999"]);
}

storage_on_every_store!(
    multi_row_inserts_past_the_parameter_limit_are_chunked,
    lookups_by_long_key_lists_are_chunked,
);
