//! Issue 34's cases: applications reading flags over OFREP with an SDK key, from the server's
//! evaluation snapshots (no database round trip once the snapshot is built).
//!
//! - `ofrep-one`: one flag of project `bench` for a context, beside `pgbench -S`.
//! - `ofrep-bulk-500`: every flag of a 500-flag environment for a context, at one connection
//!   per core: its p99.

use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::json;

use super::{bench_flag, targeting_patch, StoreCases, API};
use crate::bench::http::{Request, JSON};
use crate::bench::pgbench::Mode;
use crate::bench::report::Goal;

/// Flags of project `eval`, whose production environment `ofrep-bulk-500` evaluates.
const BULK_FLAGS: u64 = 500;
/// Connections of the bulk case: one per core of the machine the goal was set on.
const BULK_CONNECTIONS: usize = 2;
/// The bulk case's goal.
const BULK_P99_MS: f64 = 5.0;

/// A context for request `n`: a user among 10,000, with an email some rules match.
fn context(n: u64) -> String {
    let user = n % 10_000;
    json!({"context": {"targetingKey": format!("user-{user}"),
                       "email": format!("u{user}@{}", if user.is_multiple_of(3) { "example.com" } else { "other.org" })}})
    .to_string()
}

impl StoreCases<'_> {
    /// The production SDK key of project `project`.
    fn sdk_key(&self, project: &str) -> Result<String> {
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
    fn with_key(
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
        if self.settings.selected("ofrep-one") {
            let key = self.sdk_key("bench")?;
            self.with_key(key, |cases| {
                cases.measure(
                    "ofrep-one",
                    Some(Mode::Select),
                    Goal::ShareOfReference(2.0),
                    Arc::new(|n| {
                        Request::with_body(
                            "POST",
                            format!("/ofrep/v1/evaluate/flags/{}", bench_flag(n)),
                            JSON,
                            context(n),
                        )
                    }),
                )
            })?;
        }
        if self.settings.selected("ofrep-bulk-500") {
            self.seed_eval_project()?;
            let key = self.sdk_key("eval")?;
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
        let project = json!({"key": "eval", "name": "Eval"});
        self.send_ok(&Request::with_body(
            "POST",
            format!("{API}/projects"),
            JSON,
            project.to_string(),
        ))?;
        self.seed(
            "eval flags",
            BULK_FLAGS,
            Arc::new(|n| {
                let body = json!({"key": format!("eval-{n:03}"), "name": format!("Eval {n:03}")});
                Request::with_body("POST", format!("{API}/flags/eval"), JSON, body.to_string())
            }),
        )?;
        self.seed(
            "eval targeting",
            BULK_FLAGS,
            Arc::new(|n| {
                Request::with_body(
                    "PATCH",
                    format!("{API}/flags/eval/eval-{n:03}"),
                    JSON,
                    targeting_patch(true).to_string(),
                )
            }),
        )?;
        self.notes.push(format!(
            "Project `eval`: {BULK_FLAGS} flags, each on in production with a rule; `ofrep-bulk-500` evaluates all of them per request at {BULK_CONNECTIONS} connections."
        ));
        Ok(())
    }
}
