//! Issue 35's polling cases: `GET /sdk/latest-all` as the server-side SDKs poll it, with the
//! production SDK key of project `poll` (50 flags, each on with a target and a rule), beside
//! `pgbench -S`:
//!
//! - `poll-304`: with `If-None-Match` naming the current `ETag`: every answer must be a 304
//!   (what a poll costs while nothing changed; goal ≥ 2× pgbench -S);
//! - `poll-200`: without it: the whole payload (serialised once per snapshot) every time.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::StoreCases;
use crate::bench::http::Request;
use crate::bench::load::Target;
use crate::bench::pgbench::Mode;
use crate::bench::report::Goal;

/// Flags of project `poll`.
const POLL_FLAGS: u64 = 50;
const PATH: &str = "/sdk/latest-all";

fn poll_flag(n: u64) -> String {
    format!("poll-{:02}", n % POLL_FLAGS)
}

impl StoreCases<'_> {
    pub(super) fn polling(&mut self) -> Result<()> {
        if !self.settings.any_selected(&["poll-304", "poll-200"]) {
            return Ok(());
        }
        self.seed_poll_project()?;
        let key = self.sdk_key("poll")?;
        let etag = self.check_conditional_poll(&key)?;
        if self.settings.selected("poll-304") {
            self.with_key(key.clone(), |cases| {
                cases.measure(
                    "poll-304",
                    Some(Mode::Select),
                    Goal::ShareOfReference(2.0),
                    Arc::new(move |_| {
                        Request::get(PATH)
                            .with_header("If-None-Match", etag.clone())
                            .expecting(304)
                    }),
                )
            })?;
        }
        if self.settings.selected("poll-200") {
            self.with_key(key, |cases| {
                cases.measure(
                    "poll-200",
                    Some(Mode::Select),
                    Goal::None,
                    Arc::new(|_| Request::get(PATH).expecting(200)),
                )
            })?;
        }
        Ok(())
    }

    /// One poll and one conditional poll: the `ETag`, once the second answered 304.
    fn check_conditional_poll(&mut self, key: &str) -> Result<String> {
        let reader = Target {
            token: key.to_owned(),
            ..self.target.clone()
        };
        let first = self.runtime.block_on(reader.send(&Request::get(PATH)))?;
        if first.status != 200 {
            bail!(
                "GET {PATH} answered {}: {}",
                first.status,
                first.body_sample()
            );
        }
        let etag = first
            .etag
            .clone()
            .context("GET /sdk/latest-all without ETag")?;
        let again = self.runtime.block_on(
            reader.send(&Request::get(PATH).with_header("If-None-Match", etag.clone())),
        )?;
        if again.status != 304 {
            bail!(
                "GET {PATH} with If-None-Match {etag} answered {}, not 304",
                again.status
            );
        }
        let flags = first.json()?["flags"]
            .as_object()
            .map_or(0, serde_json::Map::len);
        self.notes.push(format!(
            "poll-304, poll-200: `GET {PATH}` of project `poll` answers {flags} flags in {} bytes (ETag {etag}); with `If-None-Match` naming it, 304 with an empty body.",
            first.body.len()
        ));
        Ok(etag)
    }

    /// Project `poll` with 50 flags, each on in production with a target and a rule.
    fn seed_poll_project(&mut self) -> Result<()> {
        self.seed_targeted_project(
            json!({"key": "poll", "name": "Poll"}),
            POLL_FLAGS,
            poll_flag,
            |n| format!("Poll {n:02}"),
            true,
        )
    }
}
