//! Issue 35's stream cases, each on servers of its own after the stores' cases:
//!
//! - `stream-propagation` (PostgreSQL): two replicas, 1,000 streams, the delay of a toggle to
//!   every stream (`propagation`);
//! - `stream-idle-10k` (SQLite): 10,000 idle streams on one replica: memory, idle CPU, and a
//!   toggle to all of them (`idle`);
//! - `stream-chaos` (PostgreSQL): SDK-like clients through a PostgreSQL restart and a replica
//!   killed, their stores compared with the server's at the end (`chaos`).
//!
//! The streams are read by tasks on the bench's runtime (one thread, `sse`'s client); the
//! toggles whose delays are measured are sent from a thread of their own (`setup`).
//! (Issue 35's polling cases, `poll-304` and `poll-200`, are cases of each store:
//! `cases::polling`.)

mod chaos;
mod idle;
mod propagation;
mod sdk_client;
mod setup;
mod sse;
mod watch;

use std::path::Path;

use anyhow::Result;

use super::cases::Settings;
use crate::postgres;
pub use setup::Outcome;

/// The stream cases' ids, in the order they run.
pub const CASES: [&str; 3] = ["stream-propagation", "stream-idle-10k", "stream-chaos"];

/// What the stream cases need of the run.
#[derive(Debug)]
pub struct Run<'a> {
    pub runtime: &'a tokio::runtime::Runtime,
    pub binary: &'a Path,
    pub work_dir: &'a Path,
    pub settings: &'a Settings,
    /// The cluster, with a fresh database for `stream-propagation` and one for
    /// `stream-chaos`; `None` without PostgreSQL.
    pub postgres: Option<(&'a postgres::Server, [String; 2])>,
}

impl Run<'_> {
    /// Whether any stream case is selected.
    pub fn any_selected(settings: &Settings) -> bool {
        CASES.iter().any(|case| settings.selected(case))
    }
}

fn merge(all: &mut Outcome, one: Outcome) {
    all.rows.extend(one.rows);
    all.notes.extend(one.notes);
    all.broken.extend(one.broken);
}

/// Runs the selected stream cases.
pub fn run(run: &Run<'_>) -> Result<Outcome> {
    let mut all = Outcome::default();
    let without_postgres = |case: &str| format!("{case}: not run, it needs PostgreSQL");
    if run.settings.selected("stream-propagation") {
        match &run.postgres {
            Some((_, [database, _])) => merge(
                &mut all,
                propagation::run(run.runtime, run.binary, database, run.work_dir)?,
            ),
            None => all.notes.push(without_postgres("stream-propagation")),
        }
    }
    if run.settings.selected("stream-idle-10k") {
        merge(&mut all, idle::run(run.runtime, run.binary, run.work_dir)?);
    }
    if run.settings.selected("stream-chaos") {
        match &run.postgres {
            Some((server, [_, database])) => merge(
                &mut all,
                chaos::run(run.runtime, run.binary, (database, server), run.work_dir)?,
            ),
            None => all.notes.push(without_postgres("stream-chaos")),
        }
    }
    Ok(all)
}
