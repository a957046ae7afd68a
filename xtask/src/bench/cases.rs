//! The cases of issue 11 on one running server: seeding through the API, then each case under
//! load; issue 34's evaluation cases in `evaluation`. Case ids are what `--cases` selects.

mod evaluation;
mod polling;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::http::{Request, Response, JSON, SEMANTIC_PATCH};
use super::load::{self, Length, Load, MakeRequest, Measured, Target};
use super::pgbench::Mode;
use super::report::{Goal, Row};
use super::store::Store;

/// Every case id, in the order they run.
pub const CASES: [&str; 23] = [
    "get",
    "toggle-hot",
    "toggle-spread",
    "create",
    "contention",
    "create-50env",
    "list-1k",
    "list-1k-offset",
    "list-1k-query",
    "list-10k",
    "list-10k-offset",
    "list-10k-query",
    "audit-1k-spec",
    "audit-10k-spec",
    "envs-10k",
    "ofrep-one",
    "ofrep-bulk-500",
    "poll-304",
    "poll-200",
    // Once per run, on a server of its own (see `bench::snapshots`).
    "snapshots-100x1000",
    // Once per run, after the stores, on servers of their own (see `bench::streams`).
    "stream-propagation",
    "stream-idle-10k",
    "stream-chaos",
];

/// Connections used for seeding (not measured, except where a case says so).
const SEED_CONNECTIONS: usize = 32;
/// How often a seeding request is sent before the run gives up.
const SEED_ATTEMPTS: usize = 3;
/// Flags of project `bench`: toggle-spread cycles through them, get reads them.
const BENCH_FLAGS: u64 = 100;
/// The contention case: this many connections, each sending this many patches to one flag.
const CONTENTION_CONNECTIONS: usize = 16;
const CONTENTION_PATCHES_EACH: u64 = 25;
/// Project `big`: its environments, and its flag counts at the two list measurements.
const BIG_ENVIRONMENTS: usize = 50;
const BIG_FEW_FLAGS: u64 = 1_000;
const BIG_MANY_FLAGS: u64 = 10_000;
/// `filter=query:` text matching 10 of project `big`'s flags (flag-00420 .. flag-00429) at
/// 1k and at 10k alike, so that only the number of flags searched differs.
const BIG_QUERY: &str = "flag-0042";
/// Project `wide`: environments wanted, and the query matching 10 of them (env-00040..49).
const WIDE_ENVIRONMENTS: u64 = 10_000;
const WIDE_QUERY: &str = "env-0004";

const API: &str = "/api/v2";

/// What every case of a store needs.
#[derive(Debug)]
pub struct Settings {
    pub connections: usize,
    pub warmup: Duration,
    pub duration: Duration,
    /// `None`: every case.
    pub cases: Option<BTreeSet<String>>,
    pub ticks_per_second: f64,
}

impl Settings {
    pub fn selected(&self, case: &str) -> bool {
        self.cases.as_ref().is_none_or(|cases| cases.contains(case))
    }

    fn any_selected(&self, cases: &[&str]) -> bool {
        cases.iter().any(|case| self.selected(case))
    }
}

/// One store's cases, run against its server.
#[derive(Debug)]
pub struct StoreCases<'a> {
    pub runtime: &'a tokio::runtime::Runtime,
    pub target: Target,
    pub settings: &'a Settings,
    pub store: Store,
    /// The server's PostgreSQL database, to refresh its statistics after seeding.
    pub postgres_url: Option<String>,
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
    /// Checks that failed (a lost update, a wrong count): the run fails after reporting them.
    pub broken: Vec<String>,
}

impl StoreCases<'_> {
    pub fn run_all(&mut self) -> Result<()> {
        let s = self.settings;
        if s.any_selected(&["get", "toggle-hot", "toggle-spread", "create"]) {
            self.seed_bench_project()?;
        }
        if s.selected("get") {
            self.measure(
                "get",
                Some(Mode::Select),
                Goal::ShareOfReference(0.30),
                Arc::new(|n| Request::get(format!("{API}/flags/bench/{}", bench_flag(n)))),
            )?;
        }
        if s.selected("toggle-hot") {
            self.measure(
                "toggle-hot",
                Some(Mode::Write),
                Goal::AtLeast(1_500.0, "≥ 1,500 req/s (3× the 410–570 before)"),
                Arc::new(|n| toggle(&bench_flag(0), n.is_multiple_of(2))),
            )?;
        }
        if s.selected("toggle-spread") {
            self.measure(
                "toggle-spread",
                Some(Mode::Write),
                Goal::ShareOfReference(0.50),
                Arc::new(|n| toggle(&bench_flag(n), (n / BENCH_FLAGS).is_multiple_of(2))),
            )?;
        }
        if s.selected("create") {
            self.measure(
                "create",
                Some(Mode::Write),
                Goal::ShareOfReference(0.50),
                Arc::new(|n| {
                    let body = json!({"key": format!("new-{n:07}"), "name": format!("New {n:07}")});
                    Request::with_body("POST", format!("{API}/flags/bench"), JSON, body.to_string())
                }),
            )?;
        }
        if s.selected("contention") {
            self.contention()?;
        }
        if s.any_selected(&[
            "create-50env",
            "list-1k",
            "list-1k-offset",
            "list-1k-query",
            "list-10k",
            "list-10k-offset",
            "list-10k-query",
            "audit-1k-spec",
            "audit-10k-spec",
        ]) {
            self.lists()?;
        }
        if s.selected("envs-10k") {
            self.environments_list()?;
        }
        self.evaluation()?;
        self.polling()
    }

    fn send(&self, request: &Request) -> Result<Response> {
        self.runtime.block_on(self.target.send(request))
    }

    /// Sends one request and fails unless it succeeds.
    fn send_ok(&self, request: &Request) -> Result<Response> {
        let response = self.send(request)?;
        if !response.is_success() {
            bail!(
                "{} {} answered {}: {}",
                request.method,
                request.path,
                response.status,
                response.body_sample()
            );
        }
        Ok(response)
    }

    fn load(&self, load: &Load, make: MakeRequest) -> Result<Measured> {
        self.runtime.block_on(load::run(&self.target, load, make))
    }

    /// Creates project `project` (its POST body, with key `key`), then `count` flags, flag `n`
    /// keyed `flag_key(n)` and named `flag_name(n)`, each given `targeting_patch(on)` (a target
    /// and a rule in production; turned on when `on`).
    fn seed_targeted_project(
        &mut self,
        project: serde_json::Value,
        count: u64,
        flag_key: fn(u64) -> String,
        flag_name: fn(u64) -> String,
        on: bool,
    ) -> Result<()> {
        let key = project["key"].as_str().unwrap_or_default().to_owned();
        self.send_ok(&Request::with_body(
            "POST",
            format!("{API}/projects"),
            JSON,
            project.to_string(),
        ))?;
        let flags = format!("{API}/flags/{key}");
        let created = flags.clone();
        self.seed(
            &format!("{key} flags"),
            count,
            Arc::new(move |n| {
                let body = json!({"key": flag_key(n), "name": flag_name(n)});
                Request::with_body("POST", created.clone(), JSON, body.to_string())
            }),
        )?;
        self.seed(
            &format!("{key} targeting"),
            count,
            Arc::new(move |n| {
                Request::with_body(
                    "PATCH",
                    format!("{flags}/{}", flag_key(n)),
                    JSON,
                    targeting_patch(on).to_string(),
                )
            }),
        )?;
        Ok(())
    }

    /// Sends `total` requests over the seeding connections; every one must succeed. Requests
    /// that fail are sent again (up to `SEED_ATTEMPTS` in all): a server that answers 503 for a
    /// moment under load should not lose the whole run, but it is noted as a finding.
    fn seed(&mut self, label: &str, total: u64, make: MakeRequest) -> Result<Measured> {
        let measured = self.load(
            &Load {
                connections: SEED_CONNECTIONS,
                length: Length::Total(total),
                progress: Some(format!("{} {label}", self.store.name())),
            },
            make.clone(),
        )?;
        let mut failed = measured.failed_numbers.clone();
        let failures = measured
            .failures
            .most_common()
            .map(|(status, count, sample)| {
                format!(
                    "{} failed at first, most often {status} (×{count}): {sample}",
                    failed.len()
                )
            });
        for _retry in 1..SEED_ATTEMPTS {
            if failed.is_empty() {
                break;
            }
            let again = failed.clone();
            let make = make.clone();
            let retried = self.load(
                &Load {
                    connections: SEED_CONNECTIONS.min(again.len()),
                    length: Length::Total(again.len() as u64),
                    progress: None,
                },
                Arc::new(move |i| make(again[i as usize])),
            )?;
            failed = retried
                .failed_numbers
                .iter()
                .map(|&i| failed[i as usize])
                .collect();
        }
        if let Some(failures) = failures {
            let note = format!(
                "Seeding {label} ({total} requests): {failures}; {}",
                if failed.is_empty() {
                    "all succeeded when sent again".to_owned()
                } else {
                    format!(
                        "{} still failed after {SEED_ATTEMPTS} attempts",
                        failed.len()
                    )
                }
            );
            println!("  {note}");
            self.notes.push(note);
        }
        if !failed.is_empty() {
            bail!(
                "seeding {label}: {} of {total} requests failed",
                failed.len()
            );
        }
        self.refresh_statistics()?;
        Ok(measured)
    }

    /// After seeding, PostgreSQL's planner statistics describe the tables as they were before
    /// (empty), until autovacuum catches up: plans made from them can be far off (list-1k right
    /// after seeding ran at a thirtieth of its speed). A live server's tables have been analysed;
    /// so the bench runs VACUUM ANALYZE itself rather than measure the moment before autovacuum.
    fn refresh_statistics(&self) -> Result<()> {
        if let Some(url) = &self.postgres_url {
            crate::postgres::psql(url, "VACUUM ANALYZE").context("refreshing statistics")?;
        }
        Ok(())
    }

    /// A timed case with the configured connections, warm-up and duration.
    fn measure(
        &mut self,
        case: &str,
        reference: Option<Mode>,
        goal: Goal,
        make: MakeRequest,
    ) -> Result<()> {
        let measured = self.timed(self.settings.connections, make)?;
        self.record(case, &measured, reference, goal);
        Ok(())
    }

    /// A timed case at `connections`, with no reference.
    fn measure_at(
        &mut self,
        case: &str,
        connections: usize,
        goal: Goal,
        make: MakeRequest,
    ) -> Result<()> {
        let measured = self.timed(connections, make)?;
        self.record(case, &measured, None, goal);
        Ok(())
    }

    /// `make`'s requests at `connections` for the configured warm-up and duration.
    fn timed(&self, connections: usize, make: MakeRequest) -> Result<Measured> {
        self.load(
            &Load {
                connections,
                length: Length::Timed {
                    warmup: self.settings.warmup,
                    duration: self.settings.duration,
                },
                progress: None,
            },
            make,
        )
    }

    fn record(&mut self, case: &str, measured: &Measured, reference: Option<Mode>, goal: Goal) {
        let row = Row::new(
            case,
            measured,
            self.settings.ticks_per_second,
            reference,
            goal,
        );
        println!(
            "  {:<16} {:>8.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  non-2xx {}  CPU ms/req: flagsvc {} PostgreSQL {} load generator {}; other processes {} cores",
            case,
            row.per_second,
            row.p50_us as f64 / 1000.0,
            row.p99_us as f64 / 1000.0,
            row.non_2xx,
            row.server_ms.map_or("n/a".into(), |v| format!("{v:.3}")),
            row.postgres_ms.map_or("n/a".into(), |v| format!("{v:.3}")),
            row.load_generator_ms.map_or("n/a".into(), |v| format!("{v:.3}")),
            row.other_cores.map_or("n/a".into(), |v| format!("{v:.2}")),
        );
        if let Some((status, count, sample)) = &row.most_common_failure {
            println!("    most common non-2xx: {status} (×{count}): {sample}");
        }
        self.rows.push(row);
    }

    /// Project `bench` (dev, staging, production) with 100 flags, each with a target and a rule
    /// in production (about 2.9 KB of JSON each).
    fn seed_bench_project(&mut self) -> Result<()> {
        let environments: Vec<_> = [
            ("dev", "Dev"),
            ("staging", "Staging"),
            ("production", "Production"),
        ]
        .iter()
        .map(|(key, name)| json!({"key": key, "name": name, "color": "00AA00"}))
        .collect();
        let project = json!({"key": "bench", "name": "Bench", "environments": environments});
        self.seed_targeted_project(
            project,
            BENCH_FLAGS,
            bench_flag,
            |n| format!("Bench flag {n:03}"),
            false,
        )?;
        let flag = self.send_ok(&Request::get(format!(
            "{API}/flags/bench/{}",
            bench_flag(0)
        )))?;
        self.notes.push(format!(
            "Project `bench`: 3 environments, {BENCH_FLAGS} flags of {} bytes of JSON each (a target and a rule in production).",
            flag.body.len()
        ));
        Ok(())
    }

    /// 16 connections × 25 JSON Patches adding distinct values to one target of one flag: the
    /// wall time for all of them, and afterwards every value must be there (no lost update).
    fn contention(&mut self) -> Result<()> {
        let body = json!({"key": "contended", "name": "Contended"});
        self.send_ok(&Request::with_body(
            "POST",
            format!("{API}/flags/bench"),
            JSON,
            body.to_string(),
        ))?;
        let target = json!([{"op": "add", "path": "/environments/production/targets/-",
                             "value": {"values": ["seed"], "variation": 0}}]);
        self.send_ok(&Request::with_body(
            "PATCH",
            format!("{API}/flags/bench/contended"),
            JSON,
            target.to_string(),
        ))?;
        let measured = self.load(
            &Load {
                connections: CONTENTION_CONNECTIONS,
                length: Length::PerConnection(CONTENTION_PATCHES_EACH),
                progress: None,
            },
            Arc::new(|n| {
                let patch = json!([{"op": "add", "path": "/environments/production/targets/0/values/-",
                                    "value": contention_value(n)}]);
                Request::with_body("PATCH", format!("{API}/flags/bench/contended"), JSON, patch.to_string())
            }),
        )?;
        self.record(
            "contention",
            &measured,
            Some(Mode::Write),
            Goal::ContentionWithinTwiceSqlite,
        );

        let total = CONTENTION_CONNECTIONS as u64 * CONTENTION_PATCHES_EACH;
        let flag = self
            .send_ok(&Request::get(format!("{API}/flags/bench/contended")))?
            .json()?;
        let values: BTreeSet<&str> = flag["environments"]["production"]["targets"][0]["values"]
            .as_array()
            .context("the contended flag's production target has no values")?
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        let missing = (0..total)
            .filter(|&n| !values.contains(contention_value(n).as_str()))
            .count();
        let note = format!(
            "contention: {total} JSON Patches on one flag over {CONTENTION_CONNECTIONS} connections took {:.0} ms of wall time; {} of the {total} values are in the flag afterwards.",
            measured.window.as_secs_f64() * 1000.0,
            total as usize - missing
        );
        println!("  {note}");
        self.notes.push(note);
        if missing > 0 {
            self.broken.push(format!(
                "{}: contention lost {missing} of {total} updates",
                self.store.name()
            ));
        }
        Ok(())
    }

    /// Project `big` (50 environments): flags created through the API to 1,000 (measured: the
    /// create-50env row), the list cases, then to 10,000 and the list cases again.
    fn lists(&mut self) -> Result<()> {
        let mut environments =
            vec![json!({"key": "production", "name": "Production", "color": "AA0000"})];
        environments.extend(
            (1..BIG_ENVIRONMENTS).map(|i| json!({"key": format!("env-{i:02}"), "name": format!("Env {i:02}"), "color": "00AA00"})),
        );
        let project = json!({"key": "big", "name": "Big", "environments": environments});
        self.send_ok(&Request::with_body(
            "POST",
            format!("{API}/projects"),
            JSON,
            project.to_string(),
        ))?;

        let create = |offset: u64| -> MakeRequest {
            Arc::new(move |n| {
                let n = n + offset;
                let body = json!({"key": format!("flag-{n:05}"), "name": format!("Flag {n:05}")});
                Request::with_body("POST", format!("{API}/flags/big"), JSON, body.to_string())
            })
        };
        let seeded = self.seed(
            &format!("big flags to {BIG_FEW_FLAGS}"),
            BIG_FEW_FLAGS,
            create(0),
        )?;
        if self.settings.selected("create-50env") {
            self.record("create-50env", &seeded, Some(Mode::Write), Goal::None);
        }
        self.list_cases("1k", BIG_FEW_FLAGS)?;

        if self.settings.any_selected(&[
            "list-10k",
            "list-10k-offset",
            "list-10k-query",
            "audit-10k-spec",
        ]) {
            let seeded = self.seed(
                &format!("big flags to {BIG_MANY_FLAGS}"),
                BIG_MANY_FLAGS - BIG_FEW_FLAGS,
                create(BIG_FEW_FLAGS),
            )?;
            let note = format!(
                "Seeding project `big` from {BIG_FEW_FLAGS} to {BIG_MANY_FLAGS} flags ({BIG_ENVIRONMENTS} environments) through the API: {:.0} s, {:.0} creates/s.",
                seeded.window.as_secs_f64(),
                seeded.per_second()
            );
            println!("  {note}");
            self.notes.push(note);
            self.list_cases("10k", BIG_MANY_FLAGS)?;
        }
        Ok(())
    }

    /// The list cases at one size: first page, a page near the end, a query matching few; and a
    /// search of the audit log (which then holds at least as many entries as flags) by a
    /// project-level specifier that no entry matches but whose text every flag's resource starts
    /// with (what cost O(N²) before issue 32).
    fn list_cases(&mut self, size: &str, flags: u64) -> Result<()> {
        let compared_with = |case: &'static str| (size == "10k").then_some(case);
        let list = |extra: &str| format!("{API}/flags/big?env=production&limit=20{extra}");
        let variants = [
            (format!("list-{size}"), list(""), compared_with("list-1k")),
            (
                format!("list-{size}-offset"),
                list(&format!("&offset={}", flags - 100)),
                compared_with("list-1k-offset"),
            ),
            (
                format!("list-{size}-query"),
                list(&format!("&filter=query:{BIG_QUERY}")),
                compared_with("list-1k-query"),
            ),
            (
                format!("audit-{size}-spec"),
                format!("{API}/auditlog?limit=20&spec=proj/big*"),
                compared_with("audit-1k-spec"),
            ),
        ];
        for (case, path, compared_with) in variants {
            if !self.settings.selected(&case) {
                continue;
            }
            let page = self.send_ok(&Request::get(path.clone()))?;
            let page_json = page.json()?;
            self.notes.push(format!(
                "{case}: `GET {path}` answers {} items of totalCount {} ({} bytes).",
                page_json["items"].as_array().map_or(0, Vec::len),
                page_json["totalCount"],
                page.body.len()
            ));
            self.measure(
                &case,
                Some(Mode::Select),
                Goal::ListLatency { compared_with },
                Arc::new(move |_| Request::get(path.clone())),
            )?;
        }
        Ok(())
    }

    /// Project `wide` with 10,000 environments, created through the API concurrently, and the
    /// environment list filtered by a query. The server caps environments per project (100
    /// today); then the rest are spread over projects of their own, so that the database holds
    /// 10,000 environments and `wide` as many as it may.
    fn environments_list(&mut self) -> Result<()> {
        let first = json!([{"key": wide_environment(0), "name": "Env 00000", "color": "00AA00"}]);
        let project = json!({"key": "wide", "name": "Wide", "environments": first});
        self.send_ok(&Request::with_body(
            "POST",
            format!("{API}/projects"),
            JSON,
            project.to_string(),
        ))?;
        let create = |offset: u64| -> MakeRequest {
            Arc::new(move |n| {
                let n = n + offset;
                let body = json!({"key": wide_environment(n), "name": format!("Env {n:05}"), "color": "00AA00"});
                Request::with_body(
                    "POST",
                    format!("{API}/projects/wide/environments"),
                    JSON,
                    body.to_string(),
                )
            })
        };
        // Up to 100 first (today's cap), then one more to see whether the cap is there.
        let up_to_cap: u64 = 100;
        self.seed("wide environments", up_to_cap - 1, create(1))?;
        let probe = self.send(&create(0)(up_to_cap))?;
        let in_wide = if probe.is_success() {
            self.seed(
                &format!("wide environments to {WIDE_ENVIRONMENTS}"),
                WIDE_ENVIRONMENTS - up_to_cap - 1,
                create(up_to_cap + 1),
            )?;
            WIDE_ENVIRONMENTS
        } else if probe.status == 400 {
            let projects = WIDE_ENVIRONMENTS.div_ceil(up_to_cap);
            self.seed(
                "projects of 100 environments",
                projects - 1,
                Arc::new(move |n| {
                    let project = n + 1;
                    let environments: Vec<_> = (0..up_to_cap)
                        .map(|i| {
                            let number = project * up_to_cap + i;
                            json!({"key": wide_environment(number), "name": format!("Env {number:05}"), "color": "00AA00"})
                        })
                        .collect();
                    let body = json!({"key": format!("wide-{project:03}"), "name": format!("Wide {project:03}"),
                                      "environments": environments});
                    Request::with_body("POST", format!("{API}/projects"), JSON, body.to_string())
                }),
            )?;
            // The message without the request id, so that the report changes only with the server.
            let refusal = probe
                .json()
                .ok()
                .and_then(|body| body["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| probe.body_sample());
            let note = format!(
                "envs-10k: the server refuses a project's environment number {} (400: \"{refusal}\"), so `wide` has {up_to_cap} and the other {} environments are in {} more projects of {up_to_cap}.",
                up_to_cap + 1,
                WIDE_ENVIRONMENTS - up_to_cap,
                projects - 1
            );
            println!("  {note}");
            self.notes.push(note);
            up_to_cap
        } else {
            bail!(
                "creating environment {} of project wide answered {}: {}",
                up_to_cap + 1,
                probe.status,
                probe.body_sample()
            );
        };
        let path = format!("{API}/projects/wide/environments?filter=query:{WIDE_QUERY}&limit=20");
        let page = self.send_ok(&Request::get(path.clone()))?.json()?;
        self.notes.push(format!(
            "envs-10k: `GET {path}` on {in_wide} environments answers {} items of totalCount {}.",
            page["items"].as_array().map_or(0, Vec::len),
            page["totalCount"]
        ));
        self.measure(
            "envs-10k",
            Some(Mode::Select),
            Goal::ListLatency {
                compared_with: None,
            },
            Arc::new(move |_| Request::get(path.clone())),
        )
    }
}

/// A JSON Patch giving a flag a target (`user-1`, `user-2`) and a rule (emails ending in
/// `@example.com`) in production, both serving variation 0; `turn_on`: targeting on too.
fn targeting_patch(turn_on: bool) -> serde_json::Value {
    let mut patch = vec![
        json!({"op": "add", "path": "/environments/production/targets/-",
               "value": {"values": ["user-1", "user-2"], "variation": 0}}),
        json!({"op": "add", "path": "/environments/production/rules/-",
               "value": {"clauses": [{"attribute": "email", "op": "endsWith",
                                      "values": ["@example.com"], "contextKind": "user",
                                      "negate": false}],
                         "variation": 0}}),
    ];
    if turn_on {
        patch.push(json!({"op": "replace", "path": "/environments/production/on", "value": true}));
    }
    serde_json::Value::Array(patch)
}

fn bench_flag(n: u64) -> String {
    format!("flag-{:03}", n % BENCH_FLAGS)
}

fn wide_environment(n: u64) -> String {
    format!("env-{n:05}")
}

fn contention_value(n: u64) -> String {
    format!("contender-{n:03}")
}

/// A semantic patch turning a flag on or off in production.
fn toggle(flag: &str, on: bool) -> Request {
    let kind = if on { "turnFlagOn" } else { "turnFlagOff" };
    let body = json!({"environmentKey": "production", "instructions": [{"kind": kind}]});
    Request::with_body(
        "PATCH",
        format!("{API}/flags/bench/{flag}"),
        SEMANTIC_PATCH,
        body.to_string(),
    )
}
