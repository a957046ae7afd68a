//! Issue 34's cases: applications reading flags over OFREP with an SDK key, from the server's
//! evaluation snapshots (no database round trip once the snapshot is built).
//!
//! - `ofrep-one`: one flag of project `eval` (500 flags, each on with a target and a rule) for a
//!   context, beside `pgbench -S`. (Not project `bench`: by then `create` has added tens of
//!   thousands of flags to it, and its snapshot would measure that environment's size.)
//! - `ofrep-bulk-500`: every flag of a 500-flag environment for a context, at one connection
//!   per core: its p99.

use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::json;

use super::{StoreCases, API};
use crate::bench::http::{Request, JSON};
use crate::bench::pgbench::Mode;
use crate::bench::report::Goal;

/// Flags of project `eval`, whose production environment `ofrep-bulk-500` evaluates.
const BULK_FLAGS: u64 = 500;
/// Connections of the bulk case: one per core of the machine the goal was set on.
const BULK_CONNECTIONS: usize = 2;
/// The bulk case's goal.
const BULK_P99_MS: f64 = 5.0;

/// Flag `n % 500` of project `eval`.
fn eval_flag(n: u64) -> String {
    format!("eval-{:03}", n % BULK_FLAGS)
}

/// A context for request `n`: a user among 10,000, with an email some rules match.
fn context(n: u64) -> String {
    let user = n % 10_000;
    json!({"context": {"targetingKey": format!("user-{user}"),
                       "email": format!("u{user}@{}", if user.is_multiple_of(3) { "example.com" } else { "other.org" })}})
    .to_string()
}

impl StoreCases<'_> {
    /// The production SDK key of project `project`.
    pub(super) fn sdk_key(&self, project: &str) -> Result<String> {
        let env = self
            .send_ok(&Request::get(format!(
                "{API}/projects/{project}/environments/production"
            )))?
            .json()?;
        env["apiKey"]
            .as_str()
            .map(str::to_owned)
            .context("an environment without apiKey")
    }

    /// Runs `measure` with requests authenticated by `key` instead of the owner's token.
    pub(super) fn with_key(
        &mut self,
        key: String,
        measure: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let owner = std::mem::replace(&mut self.target.token, key);
        let outcome = measure(self);
        self.target.token = owner;
        outcome
    }

    pub(super) fn evaluation(&mut self) -> Result<()> {
        if !self.settings.any_selected(&["ofrep-one", "ofrep-bulk-500"]) {
            return Ok(());
        }
        self.seed_eval_project()?;
        let key = self.sdk_key("eval")?;
        if self.settings.selected("ofrep-one") {
            self.with_key(key.clone(), |cases| {
                cases.measure(
                    "ofrep-one",
                    Some(Mode::Select),
                    Goal::ShareOfReference(2.0),
                    Arc::new(|n| {
                        Request::with_body(
                            "POST",
                            format!("/ofrep/v1/evaluate/flags/{}", eval_flag(n)),
                            JSON,
                            context(n),
                        )
                    }),
                )
            })?;
        }
        if self.settings.selected("ofrep-bulk-500") {
            self.with_key(key, |cases| {
                let connections = cases.settings.connections;
                cases.measure_at(
                    "ofrep-bulk-500",
                    BULK_CONNECTIONS.min(connections),
                    Goal::P99Under(BULK_P99_MS),
                    Arc::new(|n| {
                        Request::with_body("POST", "/ofrep/v1/evaluate/flags", JSON, context(n))
                    }),
                )
            })?;
        }
        Ok(())
    }

    /// Project `eval` with 500 flags, each on in production with a target and a rule.
    fn seed_eval_project(&mut self) -> Result<()> {
        self.seed_targeted_project(
            json!({"key": "eval", "name": "Eval"}),
            BULK_FLAGS,
            eval_flag,
            |n| format!("Eval {n:03}"),
            true,
        )?;
        self.notes.push(format!(
            "Project `eval`: {BULK_FLAGS} flags, each on in production with a target and a rule; `ofrep-one` evaluates one of them per request, `ofrep-bulk-500` all of them at {BULK_CONNECTIONS} connections."
        ));
        Ok(())
    }
}
