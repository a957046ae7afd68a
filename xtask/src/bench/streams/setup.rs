//! What the stream cases share: seeding a project through the API, toggling a flag from a
//! thread of its own (so that its answers are timed apart from the streams' reads), the limit
//! of open files, and percentiles.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::json;

use crate::bench::http::{Request, Response, JSON, SEMANTIC_PATCH};
use crate::bench::load::{self, Length, Load, Target};
use crate::bench::report::StreamRow;
use crate::bench::server::{self, Flagsvc};

const API: &str = "/api/v2";

/// What a stream case gives the report.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<StreamRow>,
    /// Facts about the run, one line each.
    pub notes: Vec<String>,
    /// Faults of the server: the run fails after reporting them.
    pub broken: Vec<String>,
}

/// The owner's target on `server` (PostgreSQL's CPU is not counted by the stream cases).
pub fn owner(server: &Flagsvc) -> Target {
    Target {
        address: server.address,
        token: server::TOKEN.to_owned(),
        server_pid: server.pid(),
        postmaster_pid: None,
    }
}

/// Sends one request; fails unless it succeeds.
pub async fn send_ok(target: &Target, request: &Request) -> Result<Response> {
    let response = target.send(request).await?;
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

/// Flag `n` of `project`.
pub fn flag_key(project: &str, n: u64) -> String {
    format!("{project}-{n:02}")
}

/// Project `project` with `flags` flags (off, as created), through the API; its production
/// SDK key.
pub fn seed_project(
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    project: &str,
    flags: u64,
) -> Result<String> {
    let body = json!({"key": project, "name": project});
    runtime.block_on(send_ok(
        target,
        &Request::with_body("POST", format!("{API}/projects"), JSON, body.to_string()),
    ))?;
    let owned = project.to_owned();
    let measured = runtime.block_on(load::run(
        target,
        &Load {
            connections: 4,
            length: Length::Total(flags),
            progress: None,
        },
        Arc::new(move |n| {
            let body = json!({"key": flag_key(&owned, n), "name": flag_key(&owned, n)});
            Request::with_body(
                "POST",
                format!("{API}/flags/{owned}"),
                JSON,
                body.to_string(),
            )
        }),
    ))?;
    if let Some((status, count, sample)) = measured.failures.most_common() {
        bail!("seeding project {project}: {count} creations answered {status}: {sample}");
    }
    sdk_key(runtime, target, project)
}

/// The production SDK key of `project`.
pub fn sdk_key(
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    project: &str,
) -> Result<String> {
    let environment = runtime
        .block_on(send_ok(
            target,
            &Request::get(format!("{API}/projects/{project}/environments/production")),
        ))?
        .json()?;
    environment["apiKey"]
        .as_str()
        .map(str::to_owned)
        .context("an environment without apiKey")
}

/// A semantic patch turning `flag` of `project` on or off in production.
pub fn toggle(project: &str, flag: &str, on: bool) -> Request {
    let kind = if on { "turnFlagOn" } else { "turnFlagOff" };
    let body = json!({"environmentKey": "production", "instructions": [{"kind": kind}]});
    Request::with_body(
        "PATCH",
        format!("{API}/flags/{project}/{flag}"),
        SEMANTIC_PATCH,
        body.to_string(),
    )
}

/// One toggle: when its answer was read, and the flag's production version it answered.
#[derive(Debug, Clone, Copy)]
pub struct Toggled {
    /// When the request was sent, and when its answer was read.
    pub sent: Instant,
    pub answered: Instant,
    pub version: u64,
}

/// What a toggling thread is told.
#[derive(Debug, Clone)]
pub struct Toggles {
    pub target: Target,
    pub project: String,
    pub flag: String,
    pub count: usize,
    /// The pause before toggle `i`.
    pub pause: fn(usize) -> Duration,
}

/// Toggles the flag `count` times, one after the other, in a thread with a runtime of its
/// own: the answer of each is read as soon as it arrives, whatever the streams' readers do.
pub fn toggle_in_thread(toggles: Toggles) -> Result<JoinHandle<Result<Vec<Toggled>>>> {
    std::thread::Builder::new()
        .name("bench-toggles".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("a runtime for the toggles")?;
            runtime.block_on(async {
                let mut done = Vec::with_capacity(toggles.count);
                for i in 0..toggles.count {
                    tokio::time::sleep((toggles.pause)(i)).await;
                    let request = toggle(&toggles.project, &toggles.flag, i.is_multiple_of(2));
                    let sent = Instant::now();
                    let response = send_ok(&toggles.target, &request).await?;
                    let answered = Instant::now();
                    let flag = response.json()?;
                    let version = flag["environments"]["production"]["version"]
                        .as_u64()
                        .context("a toggle's answer without environments.production.version")?;
                    done.push(Toggled {
                        sent,
                        answered,
                        version,
                    });
                }
                Ok(done)
            })
        })
        .context("starting the toggling thread")
}

/// Waits, without blocking the runtime's other tasks, until a thread is done.
pub async fn join<T>(handle: JoinHandle<T>) -> Result<T> {
    while !handle.is_finished() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    handle
        .join()
        .map_err(|_| anyhow!("a bench thread panicked"))
}

/// The soft and hard limits of open files of this process.
fn open_files_limit() -> Option<(u64, u64)> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut numbers = line
        .trim_start_matches("Max open files")
        .split_whitespace()
        .map(|n| n.parse::<u64>().unwrap_or(u64::MAX));
    Some((numbers.next()?, numbers.next()?))
}

/// Makes sure this process (and the servers it starts from now on, which inherit it) may open
/// `needed` files, raising the soft limit with `prlimit` (to the hard limit, or above it as
/// root); what was done, for the report.
pub fn ensure_open_files(needed: u64) -> Result<String> {
    let (soft, hard) = open_files_limit().context("reading /proc/self/limits")?;
    if soft >= needed {
        return Ok(format!("open files limit {soft} (enough)"));
    }
    let raised = if hard >= needed { hard } else { needed };
    let pid = std::process::id().to_string();
    let status = Command::new("prlimit")
        .args(["--pid", &pid, &format!("--nofile={raised}:{raised}")])
        .status()
        .context("running prlimit")?;
    let (now, _) = open_files_limit().context("reading /proc/self/limits")?;
    if !status.success() || now < needed {
        bail!("{needed} open files are needed and the limit is {soft} (hard {hard}): raise it with `ulimit -n`");
    }
    Ok(format!(
        "open files limit raised from {soft} to {now} with prlimit"
    ))
}

/// The value below which `quantile` of `sorted` lie (nearest rank); 0 when empty.
pub fn percentile(sorted: &[u64], quantile: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Microseconds as milliseconds, for the report.
pub fn ms(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}

/// Starts replica `name` of a case on `database_url`, its log in `work_dir`.
pub fn replica(
    runtime: &tokio::runtime::Runtime,
    binary: &Path,
    (database_url, work_dir): (&str, &Path),
    name: &str,
    extra: &[&str],
) -> Result<Flagsvc> {
    let log = work_dir.join(format!("{name}.log"));
    let server = Flagsvc::start_with(runtime, binary, (database_url, &log), extra)
        .with_context(|| format!("starting {name}"))?;
    println!(
        "  {name}: flagsvc pid {} on {} (log: {})",
        server.pid(),
        server.address,
        log.display()
    );
    Ok(server)
}

/// The addresses of `servers`.
pub fn addresses(servers: &[&Flagsvc]) -> Vec<SocketAddr> {
    servers.iter().map(|s| s.address).collect()
}
