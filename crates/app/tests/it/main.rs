//! Integration tests: the storage port and the HTTP API, each on SQLite and on PostgreSQL (the
//! storage port also on the in-memory store).
//! PostgreSQL comes from `FLAGSVC_TEST_POSTGRES_URL` (set by `cargo xtask test`), else a
//! `postgres://` `DATABASE_URL`, else 127.0.0.1:5432; every test gets a database of its own.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_debug_implementations
)]

/// Runs each listed `async fn name(backend)` as a test on both backends.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $( #[actix_web::test] async fn $name() { super::$name(crate::common::Backend::Sqlite).await; } )*
        }
        mod postgres {
            $( #[actix_web::test] async fn $name() { super::$name(crate::common::Backend::Postgres).await; } )*
        }
    };
}

/// Runs each listed `fn name(backend)` as a test on both backends.
macro_rules! storage_on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $( #[test] fn $name() { super::$name(crate::common::Backend::Sqlite); } )*
        }
        mod postgres {
            $( #[test] fn $name() { super::$name(crate::common::Backend::Postgres); } )*
        }
    };
}

/// Runs each listed `fn name(backend)` (the storage port's contract) as a test on every store:
/// SQLite, PostgreSQL and the in-memory store. Tests listed after `sql_only:` read or write the
/// database past the port, so they run on the two SQL engines only.
macro_rules! storage_on_every_store {
    ($($name:ident),* $(,)?) => {
        storage_on_every_store!($($name),* ; sql_only:);
    };
    ($($name:ident),* ; sql_only: $($sql_only:ident),* $(,)?) => {
        mod sqlite {
            $( #[test] fn $name() { super::$name(crate::common::Backend::Sqlite); } )*
            $( #[test] fn $sql_only() { super::$sql_only(crate::common::Backend::Sqlite); } )*
        }
        mod postgres {
            $( #[test] fn $name() { super::$name(crate::common::Backend::Postgres); } )*
            $( #[test] fn $sql_only() { super::$sql_only(crate::common::Backend::Postgres); } )*
        }
        mod memory {
            $( #[test] fn $name() { super::$name(crate::common::Backend::Memory); } )*
        }
    };
}

mod common;

mod api_audit;
mod api_auth;
mod api_contract;
mod api_cost;
mod api_create_fields;
mod api_depth;
mod api_edge;
mod api_environments;
mod api_evaluate;
mod api_evaluate_edges;
mod api_flag_model;
mod api_flag_status;
mod api_flags;
mod api_input;
mod api_members;
mod api_probes;
mod api_projects;
mod api_protocol;
mod api_required_fields;
mod api_roles;
mod api_route_policies;
mod api_safety;
mod api_segments;
mod api_shown;
mod api_size_cap;
mod api_teams;
mod api_token_escalation;
mod api_tokens;
mod api_writes;
mod binary;
mod compose;
mod concurrency;
mod console;
mod http_edge;
mod ofrep;
mod openapi;
mod ops;
mod permissions;
mod previous_release;
mod rate_limit_redis;
mod read_cache;
mod replicas;
mod sdk_polling;
mod sdk_rust;
mod sdk_stream;
mod sdk_versions;
mod storage;
mod storage_audit;
mod storage_large;
mod storage_roles;
mod webhook_targets;
mod webhooks;
