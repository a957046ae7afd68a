//! Fixture data for the pages' unit tests: a service over the in-memory store, an owner and a
//! reader signed in, and project `shop` (production, critical; test) with two flags.

use std::sync::Arc;

use service::{use_case, FlagList, ProjectWithEnvironments, Service, SystemClock};

use crate::signed::Signed;

pub(crate) struct Fixture {
    pub(crate) owner: Signed,
    pub(crate) reader: Signed,
    pub(crate) project: ProjectWithEnvironments,
    pub(crate) flags: FlagList,
    /// Segment `beta` of production: two users in, one out, a rule; used by no flag.
    pub(crate) segment: service::SegmentWithFlags,
    /// The owner (the only member).
    pub(crate) members: service::MemberPage,
    /// The owner's and the reader's tokens.
    pub(crate) tokens: service::TokenPage,
}

pub(crate) fn fixture() -> Fixture {
    let service = Service::new(
        Arc::new(adapter_memory::MemoryStore::new()),
        Arc::new(SystemClock::default()),
        Arc::new(service::PlainRepresentations),
    );
    service
        .authentication()
        .bootstrap(Some("owner-token"), "owner@example.com")
        .unwrap();
    let owner = service
        .authentication()
        .authenticate("owner-token")
        .unwrap();
    let post = serde_json::from_value(serde_json::json!({"name": "r", "role": "reader"})).unwrap();
    let reader_token = service
        .tokens()
        .create_token(&owner.may(use_case::CreateToken).unwrap(), post)
        .unwrap();
    let reader = service
        .authentication()
        .authenticate(&reader_token.secret)
        .unwrap();
    let post = serde_json::from_value(serde_json::json!({
        "key": "shop", "name": "Shop",
        "environments": [
            {"key": "production", "name": "Production", "color": "ff0000", "critical": true},
            {"key": "test", "name": "Test", "color": "00ff00"}
        ]
    }))
    .unwrap();
    let project = service
        .projects()
        .create_project(&owner.may(use_case::CreateProject).unwrap(), post)
        .unwrap();
    for (key, name) in [("dark-mode", "Dark <mode>"), ("checkout", "New checkout")] {
        let post =
            serde_json::from_value(serde_json::json!({"key": key, "name": name, "tags": ["ui"]}))
                .unwrap();
        service
            .flags()
            .create_flag(&owner.may(use_case::CreateFlag).unwrap(), "shop", post)
            .unwrap();
    }
    let segment = beta_segment(&service, &owner);
    let request = service::FlagListRequest {
        query: domain::query::FlagQuery::parse(None, None, Some("name"), None).unwrap(),
        environments: service::EnvironmentSelection::All,
    };
    let flags = service
        .flags()
        .list_flags(&owner.may(use_case::ListFlags).unwrap(), "shop", &request)
        .unwrap();
    let members = service
        .members()
        .list_members(
            &owner.may(use_case::ListMembers).unwrap(),
            &domain::query::MemberQuery::parse(None, None, None, None).unwrap(),
        )
        .unwrap();
    let tokens = service
        .tokens()
        .list_tokens(
            &owner.may(use_case::ListTokens).unwrap(),
            domain::query::Page {
                limit: 50,
                offset: 0,
            },
            true,
        )
        .unwrap();
    let signed = |caller| Signed {
        caller,
        csrf_token: "c".repeat(64),
    };
    Fixture {
        owner: signed(owner),
        reader: signed(reader),
        project,
        flags,
        segment,
        members,
        tokens,
    }
}

/// Segment `beta` of `shop`'s production, with targets and a rule.
fn beta_segment(service: &Service, owner: &service::Caller) -> service::SegmentWithFlags {
    let post = serde_json::from_value(serde_json::json!({
        "key": "beta", "name": "Beta <testers>", "tags": ["qa"], "description": "Early access"
    }))
    .unwrap();
    service
        .segments()
        .create_segment(
            &owner.may(use_case::CreateSegment).unwrap(),
            "shop",
            "production",
            post,
        )
        .unwrap();
    let merge = serde_json::json!({
        "included": ["ann", "bob"],
        "excluded": ["eve"],
        "rules": [{"clauses": [{"attribute": "email", "op": "endsWith", "values": ["@example.com"], "contextKind": "user", "negate": false}], "weight": 25000}]
    });
    service
        .segments()
        .patch_segment(
            &owner.may(use_case::PatchSegment).unwrap(),
            "shop",
            "production",
            "beta",
            &service::SegmentChange::MergePatch {
                comment: None,
                merge,
            },
        )
        .unwrap();
    service
        .segments()
        .get_segment(
            &owner.may(use_case::GetSegment).unwrap(),
            "shop",
            "production",
            "beta",
        )
        .unwrap()
}
