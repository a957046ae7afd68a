//! Case `snapshots-100x1000` (issue 34): the memory a server takes with 100 environments of
//! 1,000 flags each in its evaluation snapshots. On a server of its own (SQLite: snapshots are
//! the same on either store), so that the stores' peak-RSS figures stay what their cases take:
//! a project of 100 environments and 1,000 flags (each with a target and a rule in every
//! environment's configuration by default: the configuration a new flag gets), its resident
//! memory after seeding, then after one bulk OFREP evaluation per environment has built every
//! snapshot.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::http::{Request, JSON};
use super::load::{self, Length, Load, Target};
use super::procfs::rss_kib;
use super::server::{self, Flagsvc};
use super::store::remove_sqlite;

const ENVIRONMENTS: usize = 100;
const FLAGS: u64 = 1_000;

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Sends `total` requests from `make` over 8 connections; all must succeed.
fn send_all(
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    total: u64,
    make: load::MakeRequest,
) -> Result<()> {
    let measured = runtime.block_on(load::run(
        target,
        &Load {
            connections: 8,
            length: Length::Total(total),
            progress: Some("snapshots seeding".into()),
        },
        make,
    ))?;
    if !measured.failed_numbers.is_empty() {
        bail!(
            "{} of {total} requests failed: {:?}",
            measured.failed_numbers.len(),
            measured.failures.most_common()
        );
    }
    Ok(())
}

/// Runs the case; the sentence for docs/benchmarks.md.
pub fn measure(
    runtime: &tokio::runtime::Runtime,
    binary: &Path,
    work_dir: &Path,
) -> Result<String> {
    println!("\nsnapshots-100x1000:");
    let file = work_dir.join(format!("flagsvc-snapshots-{}.db", std::process::id()));
    remove_sqlite(&file);
    let log = work_dir.join("snapshots.log");
    let server = Flagsvc::start(runtime, binary, &file.display().to_string(), &log)?;
    let outcome = seed_and_measure(runtime, &server);
    drop(server);
    remove_sqlite(&file);
    outcome.with_context(|| format!("snapshots-100x1000 (server log: {})", log.display()))
}

fn seed_and_measure(runtime: &tokio::runtime::Runtime, server: &Flagsvc) -> Result<String> {
    let owner = Target {
        address: server.address,
        token: server::TOKEN.to_owned(),
        server_pid: server.pid(),
        postmaster_pid: None,
    };
    let environments: Vec<_> = (0..ENVIRONMENTS)
        .map(|i| json!({"key": format!("env-{i:03}"), "name": format!("Env {i:03}"), "color": "00AA00"}))
        .collect();
    let project = json!({"key": "wide", "name": "Wide", "environments": environments});
    let created = runtime.block_on(owner.send(&Request::with_body(
        "POST",
        "/api/v2/projects",
        JSON,
        project.to_string(),
    )))?;
    if !created.is_success() {
        bail!(
            "creating the project: {} {}",
            created.status,
            created.body_sample()
        );
    }
    send_all(
        runtime,
        &owner,
        FLAGS,
        Arc::new(|n| {
            let body = json!({"key": format!("flag-{n:04}"), "name": format!("Flag {n:04}")});
            Request::with_body("POST", "/api/v2/flags/wide", JSON, body.to_string())
        }),
    )?;
    let listed = runtime
        .block_on(owner.send(&Request::get(
            "/api/v2/projects/wide/environments?limit=100",
        )))?
        .json()?;
    let keys: Vec<String> = listed["items"]
        .as_array()
        .context("no environments listed")?
        .iter()
        .filter_map(|env| env["apiKey"].as_str().map(str::to_owned))
        .collect();
    if keys.len() != ENVIRONMENTS {
        bail!("{} SDK keys listed, not {ENVIRONMENTS}", keys.len());
    }
    let before = rss_kib(server.pid()).context("reading the server's VmRSS")?;
    let started = std::time::Instant::now();
    for key in &keys {
        let reader = Target {
            token: key.clone(),
            ..owner.clone()
        };
        let answer = runtime.block_on(reader.send(&Request::with_body(
            "POST",
            "/ofrep/v1/evaluate/flags",
            JSON,
            json!({"context": {"targetingKey": "user-1"}}).to_string(),
        )))?;
        let flags = answer.json()?["flags"].as_array().map_or(0, Vec::len);
        if !answer.is_success() || flags != FLAGS as usize {
            bail!(
                "a bulk evaluation answered {} with {flags} flags",
                answer.status
            );
        }
    }
    let built = started.elapsed();
    let after = rss_kib(server.pid()).context("reading the server's VmRSS")?;
    let peak = super::procfs::peak_rss_kib(server.pid()).unwrap_or(after);
    let sentence = format!(
        "Evaluation snapshots of {ENVIRONMENTS} environments × {FLAGS} flags (`snapshots-100x1000`, SQLite, default `--snapshot-budget-mib 256`): resident memory {:.1} MiB after seeding, {:.1} MiB once one bulk OFREP evaluation per environment had built every snapshot ({:.1} MiB for 100,000 projected flags, {:.0} bytes per flag; peak {:.1} MiB); building and answering the 100 first evaluations took {:.1} s",
        mib(before),
        mib(after),
        mib(after.saturating_sub(before)),
        after.saturating_sub(before) as f64 * 1024.0 / (ENVIRONMENTS as f64 * FLAGS as f64),
        mib(peak),
        built.as_secs_f64(),
    );
    println!("  {sentence}");
    Ok(sentence)
}
