//! The use cases' rules, tested in isolation: each test calls the service directly with a
//! [`Caller`] over the in-memory store, and checks what the call returns and what the store holds
//! afterwards. The same rules are tested end to end over HTTP in `crates/app/tests/it`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_debug_implementations
)]

mod audit;
mod console_sessions;
mod flags;
mod jobs;
mod members;
mod paths;
mod queued;
mod roles;
mod tokens;

use std::sync::Arc;

use adapter_memory::MemoryStore;
use domain::id::{MemberId, TokenId};
use domain::member::{Member, NewMemberForm};
use domain::role::Role;
use domain::token::Token;
use ports::{Repository, StoreError, StoreExt};
use serde_json::{json, Value};
use service::{use_case, Caller, Service, SystemClock};
use sha2::Digest;

/// The owner's token, made by `bootstrap`.
const OWNER_SECRET: &str = "owner-token-for-tests";

/// A service over an empty in-memory store, with an owner.
pub struct Fixture {
    pub service: Arc<Service>,
    pub store: Arc<MemoryStore>,
    /// The owner, calling with its bootstrap token.
    pub owner: Caller,
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

impl Fixture {
    pub fn new() -> Self {
        let store = Arc::new(MemoryStore::new());
        let service = Service::new(
            store.clone(),
            Arc::new(SystemClock::default()),
            Arc::new(service::PlainRepresentations),
        );
        service
            .authentication()
            .bootstrap(Some(OWNER_SECRET), "owner@example.com")
            .unwrap();
        let owner = service.authentication().authenticate(OWNER_SECRET).unwrap();
        Self {
            service: Arc::new(service),
            store,
            owner,
        }
    }

    /// Invites a member with `role` (as the owner) and returns its `_id`.
    pub fn invite(&self, email: &str, role: &str) -> String {
        let form: NewMemberForm =
            serde_json::from_value(json!({"email": email, "role": role})).expect("an invitation");
        let permit = self.owner.may(use_case::InviteMembers).unwrap();
        let invited = self
            .service
            .members()
            .invite_members(&permit, vec![form])
            .unwrap();
        invited[0].id.to_string()
    }

    /// The caller presenting a new personal token of member `member_id` carrying `role`.
    pub fn caller_for(&self, member_id: &str, role: Role) -> Caller {
        self.service
            .authentication()
            .authenticate(&self.token_for(member_id, role))
            .unwrap()
    }

    /// The secret of a new personal token of member `member_id` carrying `role`, written
    /// straight to the store (the use cases make tokens for the calling member only).
    pub fn token_for(&self, member_id: &str, role: Role) -> String {
        let secret = format!("api-{}", service::object_id());
        let token = Token {
            id: TokenId::generate(&mut service::RandomIds),
            member_id: MemberId::parse(member_id).expect("a member id"),
            name: "test".into(),
            description: String::new(),
            role,
            service_token: false,
            default_api_version: 20240415,
            creation_date: 1,
            last_modified: 1,
            last_used: None,
            ending: secret[secret.len() - 4..].to_owned(),
            custom_role_ids: Vec::new(),
            inline_role: Vec::new(),
        };
        let hash = hex::encode(sha2::Sha256::digest(secret.as_bytes()));
        self.store
            .write_tx(|repo| repo.insert_token(&token, &hash))
            .unwrap();
        secret
    }

    /// Reads something back from the store, past the service.
    pub fn read<T>(&self, work: impl FnMut(&mut dyn Repository) -> Result<T, StoreError>) -> T {
        self.store.read_tx(work).unwrap()
    }

    /// A member as stored.
    pub fn member(&self, id: &str) -> Member {
        self.read(|repo| repo.get_member(&MemberId::parse(id).expect("a member id")))
            .expect("a member")
    }
}

/// A JSON Patch body from its operations.
pub fn json_patch(operations: Value) -> domain::patch::JsonPatchBody {
    domain::patch::JsonPatchBody::parse(operations).expect("a JSON Patch")
}
