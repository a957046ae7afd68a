//! Background work: every loop that flagsvc runs beside the API, run one way.
//!
//! A [`Job`] is one kind of due work (webhook deliveries, the SDK streams' changes and the
//! database's readiness today; scheduled changes, expiring
//! targets and event aggregation are meant to join them). The [`Runner`] gives each job a thread
//! of its own that asks it for a bounded batch of due work ([`Schedule::batch`]), at once again
//! while batches come back full, else after [`Schedule::interval`]. It counts every run in
//! `/metrics` (`flagsvc_background_runs_total{job,outcome}`,
//! `flagsvc_background_items_total{job}`), tells readiness whether each loop still runs
//! ([`Liveness`]), and stops cleanly: [`Runner::stop`] (or dropping the runner) wakes every loop
//! and waits for the batch in hand to end, never interrupting one.
//!
//! # Replicas
//! Every replica runs every job. A job claims its due work in the store, in the transaction that
//! does it (`FOR UPDATE SKIP LOCKED` on PostgreSQL, one writer at a time on SQLite) and for a
//! lease, so that two replicas never do the same item, and an item claimed by a replica that died
//! is done again once its lease ends ([`ports::WebhookRepository::claim_deliveries`] is the
//! pattern). The runner knows nothing of the work: only that it comes in batches.
//!
//! Only this crate starts loops of due work (`cargo xtask check-deps` refuses a thread or task
//! started elsewhere, but for the few listed there with their reasons).

mod readiness;
mod runner;
mod sdk_delivery;
mod webhooks;

pub use readiness::DatabaseReadiness;
pub use runner::{Job, Liveness, Runner, Schedule, Wake};
pub use sdk_delivery::SdkDelivery;
pub use webhooks::WebhookDeliveries;
