//! Several replicas on one PostgreSQL database: what one of them changes about access tokens
//! and members, the others act on within a second, and a replica that may have missed such a
//! change (its change feed was cut) trusts no token it remembers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_postgres::TestDatabase;
use domain::member::NewMemberForm;
use domain::patch::JsonPatchBody;
use domain::role::Role;
use domain::token::TokenPost;
use serde_json::json;
use service::{use_case, Caller, Service, ServiceError, SystemClock};

use crate::common::{postgres_server_url, OWNER};

/// How soon another replica must act on a change to a token or a member (issue 12).
const BOUND: Duration = Duration::from_secs(1);

/// One replica: a service with its own store (pool and change feed) on the shared database.
struct Replica {
    service: Arc<Service>,
}

impl Replica {
    fn on(db: &TestDatabase) -> Self {
        let store = adapter_postgres::connect(db.url(), 4).expect("connect");
        let service = Arc::new(Service::new(
            Arc::new(store),
            Arc::new(SystemClock::default()),
            Arc::new(adapter_http::ApiRepresentations),
        ));
        service
            .authentication()
            .bootstrap(Some(OWNER), "owner@example.com")
            .unwrap();
        Self { service }
    }

    fn owner(&self) -> Caller {
        self.service.authentication().authenticate(OWNER).unwrap()
    }

    /// A new token of `role`, made by the owner; its `_id` and secret.
    fn token(&self, role: &str) -> (String, String) {
        let owner = self.owner();
        let post: TokenPost = serde_json::from_value(json!({"role": role})).unwrap();
        let created = self
            .service
            .tokens()
            .create_token(&owner.may(use_case::CreateToken).unwrap(), post)
            .unwrap();
        (created.token.id.to_string(), created.secret)
    }

    /// Authenticates `secret` until `done` holds for the outcome, which must happen within
    /// [`BOUND`] of `since`.
    fn until(
        &self,
        since: Instant,
        secret: &str,
        what: &str,
        done: impl Fn(&Result<Caller, ServiceError>) -> bool,
    ) {
        loop {
            let outcome = self.service.authentication().authenticate(secret);
            if done(&outcome) {
                return;
            }
            assert!(
                since.elapsed() < BOUND,
                "{what}: still {outcome:?} after {:?}",
                since.elapsed()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn refused(outcome: &Result<Caller, ServiceError>) -> bool {
    matches!(outcome, Err(ServiceError::Unauthenticated(_)))
}

fn two_replicas() -> (TestDatabase, Replica, Replica) {
    let db = TestDatabase::create(&postgres_server_url()).unwrap();
    let a = Replica::on(&db);
    let b = Replica::on(&db);
    (db, a, b)
}

/// B remembers `secret` as verified (it would answer without asking the database): once its
/// change feed has caught up, which takes a heartbeat after start.
fn remembered(b: &Replica, secret: &str) {
    let start = Instant::now();
    loop {
        b.service.authentication().authenticate(secret).unwrap();
        if b.service.authentication().is_verified(secret) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "B never kept the verified token"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_token_deleted_on_one_replica_is_refused_on_another_within_a_second() {
    let (_db, a, b) = two_replicas();
    let (id, secret) = a.token("writer");
    remembered(&b, &secret);
    a.service
        .tokens()
        .delete_token(&a.owner().may(use_case::DeleteToken).unwrap(), &id)
        .unwrap();
    b.until(Instant::now(), &secret, "deleted token", refused);
}

#[test]
fn a_reset_secret_is_refused_on_another_replica_within_a_second() {
    let (_db, a, b) = two_replicas();
    let (id, secret) = a.token("writer");
    remembered(&b, &secret);
    let reset = a
        .service
        .tokens()
        .reset_token(&a.owner().may(use_case::ResetToken).unwrap(), &id, None)
        .unwrap();
    b.until(Instant::now(), &secret, "old secret", refused);
    assert!(b
        .service
        .authentication()
        .authenticate(&reset.secret)
        .is_ok());
}

#[test]
fn a_demoted_token_acts_with_its_new_role_on_another_replica_within_a_second() {
    let (_db, a, b) = two_replicas();
    let (id, secret) = a.token("writer");
    remembered(&b, &secret);
    let owner = a.owner();
    let patch =
        JsonPatchBody::parse(json!([{"op": "replace", "path": "/role", "value": "reader"}]))
            .unwrap();
    a.service
        .tokens()
        .patch_token(&owner.may(use_case::PatchToken).unwrap(), &id, &patch)
        .unwrap();
    b.until(Instant::now(), &secret, "demoted token", |outcome| {
        outcome.as_ref().is_ok_and(|c| c.role() == Role::Reader)
    });
}

#[test]
fn a_member_change_counts_for_its_tokens_on_another_replica_within_a_second() {
    let (_db, a, b) = two_replicas();
    // The owner's token acts as the owner, until ownership passes to another member.
    remembered(&b, OWNER);
    assert_eq!(
        b.service
            .authentication()
            .authenticate(OWNER)
            .unwrap()
            .role(),
        Role::Owner
    );
    let owner = a.owner();
    let form: NewMemberForm =
        serde_json::from_value(json!({"email": "next@example.com", "role": "admin"})).unwrap();
    let invited = a
        .service
        .members()
        .invite_members(&owner.may(use_case::InviteMembers).unwrap(), vec![form])
        .unwrap();
    let patch = JsonPatchBody::parse(json!([{"op": "replace", "path": "/role", "value": "owner"}]))
        .unwrap();
    a.service
        .members()
        .patch_member(
            &owner.may(use_case::PatchMember).unwrap(),
            invited[0].id.as_str(),
            &patch,
        )
        .unwrap();
    b.until(Instant::now(), OWNER, "former owner", |outcome| {
        outcome.as_ref().is_ok_and(|c| c.role() == Role::Admin)
    });
}

#[test]
fn a_replica_whose_feed_was_cut_trusts_no_token_it_remembers() {
    let (db, _a, b) = two_replicas();
    let (id, secret) = b.token("writer");
    remembered(&b, &secret);
    // Deleted behind every replica's back: no notification is sent.
    let mut admin = {
        use diesel::Connection;
        diesel::PgConnection::establish(db.url()).unwrap()
    };
    {
        use diesel::connection::SimpleConnection;
        admin
            .batch_execute(&format!("DELETE FROM tokens WHERE id = '{id}'"))
            .unwrap();
    }
    // B still trusts what it verified: it missed nothing it could have heard.
    assert!(b.service.authentication().authenticate(&secret).is_ok());
    let cut = Instant::now();
    {
        use diesel::connection::SimpleConnection;
        admin
            .batch_execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = 'flagsvc change feed' AND datname = current_database()",
            )
            .unwrap();
    }
    b.until(
        cut,
        &secret,
        "token deleted while the feed was cut",
        refused,
    );
}

/// What replica `b` evaluates for flag `flag` of the environment `sdk_key` opens, for `ann`.
fn evaluated(b: &Replica, sdk_key: &str, flag: &str) -> serde_json::Value {
    use domain::evaluation::{evaluate, Context, FlagData};
    let access = b.service.sdk().open(sdk_key).unwrap();
    let snapshot = b.service.sdk().snapshot(&access).unwrap();
    let context = Context::from_json(&json!({"key": "ann"})).unwrap();
    let detail = evaluate(snapshot.flag(flag).unwrap(), &context, &*snapshot);
    detail.value.unwrap_or_default()
}

#[test]
fn a_flag_changed_on_one_replica_is_evaluated_anew_on_another_within_a_second() {
    let (_db, a, b) = two_replicas();
    let sdk_key = shop_with_beta(&a);
    // B builds its snapshot (once its feed has caught up, it keeps it): off serves `false`.
    let start = Instant::now();
    while b.service.kept_snapshots().0 == 0 {
        assert_eq!(evaluated(&b, &sdk_key, "beta"), json!(false));
        assert!(start.elapsed() < Duration::from_secs(5), "B never kept it");
        std::thread::sleep(Duration::from_millis(5));
    }
    switch(&a, true);
    let changed = Instant::now();
    while evaluated(&b, &sdk_key, "beta") != json!(true) {
        assert!(
            changed.elapsed() < BOUND,
            "B still serves the old flag after {:?}",
            changed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Project `shop` (made on `a`) with flag `beta`; the production SDK key.
fn shop_with_beta(a: &Replica) -> String {
    let owner = a.owner();
    let post: domain::project::ProjectPost =
        serde_json::from_value(json!({"key": "shop", "name": "Shop"})).unwrap();
    let project = a
        .service
        .projects()
        .create_project(&owner.may(use_case::CreateProject).unwrap(), post)
        .unwrap();
    let flag: domain::flag::FlagPost =
        serde_json::from_value(json!({"key": "beta", "name": "Beta"})).unwrap();
    a.service
        .flags()
        .create_flag(&owner.may(use_case::CreateFlag).unwrap(), "shop", flag)
        .unwrap();
    project
        .environments
        .unwrap()
        .iter()
        .find(|env| env.key.as_str() == "production")
        .map(|env| env.api_key.clone())
        .unwrap()
}

/// Switches `beta` in production on `a`.
fn switch(a: &Replica, on: bool) {
    let kind = if on { "turnFlagOn" } else { "turnFlagOff" };
    let change = service::FlagChange::Semantic(
        domain::instruction::SemanticPatch::parse(
            json!({"environmentKey": "production", "instructions": [{"kind": kind}]}),
        )
        .unwrap(),
    );
    a.service
        .flags()
        .patch_flag(
            &a.owner().may(use_case::PatchFlag).unwrap(),
            "shop",
            "beta",
            &change,
        )
        .unwrap();
}

/// The next event on `stream` within `wait` (heartbeats skipped): name and data.
fn next_event(
    stream: &mut service::Subscription,
    wait: Duration,
) -> Option<(String, serde_json::Value)> {
    let until = Instant::now() + wait;
    while Instant::now() < until {
        match stream.try_next() {
            Some(Ok(service::StreamItem::Event(event))) => {
                let text = String::from_utf8(event.to_vec()).unwrap();
                if text.starts_with(':') {
                    continue;
                }
                let (name, data) = text
                    .trim_end()
                    .strip_prefix("event: ")
                    .and_then(|rest| rest.split_once("\ndata: "))
                    .unwrap();
                return Some((name.to_owned(), serde_json::from_str(data).unwrap()));
            }
            Some(other) => panic!("the stream ended: {other:?}"),
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    None
}

/// The SDK delivery job of `replica`, as the binary runs it.
fn delivering(replica: &Replica) -> background::Runner {
    let mut runner = background::Runner::new();
    runner
        .start(
            Arc::new(background::SdkDelivery::new(replica.service.clone())),
            background::Schedule {
                interval: Duration::from_millis(200),
                batch: 64,
            },
        )
        .unwrap();
    runner
}

#[test]
fn a_change_on_one_replica_reaches_the_sdk_streams_of_another() {
    let (_db, a, b) = two_replicas();
    let sdk_key = shop_with_beta(&a);
    let _jobs = delivering(&b);
    let access = b.service.sdk().open(&sdk_key).unwrap();
    let mut stream = b.service.sdk().stream(&access).unwrap();
    let put = String::from_utf8(stream.put().to_vec()).unwrap();
    assert!(put.contains("\"on\":false"), "{put}");
    for on in [true, false, true] {
        switch(&a, on);
        let switched = Instant::now();
        let (name, patch) = next_event(&mut stream, BOUND).expect("the change within 1 s");
        assert_eq!(name, "patch");
        assert_eq!(patch["data"]["on"], on, "{patch}");
        println!(
            "a change on A reached B's stream in {:?}",
            switched.elapsed()
        );
    }
}

#[test]
fn a_replica_whose_feed_was_cut_sends_its_streams_a_fresh_put() {
    let (db, a, b) = two_replicas();
    let sdk_key = shop_with_beta(&a);
    let _jobs = delivering(&b);
    let access = b.service.sdk().open(&sdk_key).unwrap();
    let mut stream = b.service.sdk().stream(&access).unwrap();
    // Cut every change feed; A changes the flag meanwhile (B may not hear of it).
    let mut admin = {
        use diesel::Connection;
        diesel::PgConnection::establish(db.url()).unwrap()
    };
    {
        use diesel::connection::SimpleConnection;
        admin
            .batch_execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = 'flagsvc change feed' AND datname = current_database()",
            )
            .unwrap();
    }
    switch(&a, true);
    // Once B's feed is back, its stream holds the change: by a patch if B heard it, else by a
    // fresh put; a put in any case, as B may have missed changes.
    let mut put = None;
    let until = Instant::now() + Duration::from_secs(10);
    while put.is_none() && Instant::now() < until {
        if let Some((name, data)) = next_event(&mut stream, Duration::from_millis(100)) {
            if name == "put" {
                put = Some(data);
            }
        }
    }
    let put = put.expect("a fresh put within 10 s of the cut");
    assert_eq!(put["data"]["flags"]["beta"]["on"], true, "{put}");
}
