//! Case `stream-idle-10k` (issue 35): 10,000 idle `GET /all` streams on one replica (SQLite,
//! on a server of its own, so that the memory measured is the streams' and not what earlier
//! cases left in the allocator): the server's resident memory before and after they open,
//! its CPU while they are idle, then toggles that must reach all of them.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::setup::{self, ms, Outcome, Toggles};
use super::watch::{self, Delays};
use crate::bench::http::Request;
use crate::bench::load::Target;
use crate::bench::procfs;
use crate::bench::report::StreamRow;
use crate::bench::server::Flagsvc;
use crate::bench::store::remove_sqlite;

const PROJECT: &str = "idle";
/// A small environment: the `put` each stream gets first stays small.
const FLAGS: u64 = 3;
const STREAMS: usize = 10_000;
/// Streams that connect at once while they are opened.
const WAVE: usize = 500;
/// Pause after the streams open (or the toggles), before memory is read.
const SETTLE: Duration = Duration::from_secs(2);
/// How long the idle streams' CPU is measured.
const IDLE: Duration = Duration::from_secs(10);
const TOGGLES: usize = 5;
const GOAL_KIB_PER_STREAM: f64 = 16.0;
const GOAL_P99_MS: f64 = 250.0;

fn pause(_: usize) -> Duration {
    Duration::from_secs(1)
}

pub fn run(runtime: &tokio::runtime::Runtime, binary: &Path, work_dir: &Path) -> Result<Outcome> {
    println!("\nstream-idle-10k:");
    let limit = setup::ensure_open_files(STREAMS as u64 + 1_000)?;
    println!("  {limit}");
    let file = work_dir.join(format!("flagsvc-idle-{}.db", std::process::id()));
    remove_sqlite(&file);
    let database = file.display().to_string();
    let server = setup::replica(runtime, binary, (&database, work_dir), "stream-idle", &[])?;
    let outcome = measure(runtime, &server, &limit);
    drop(server);
    remove_sqlite(&file);
    outcome
}

/// What was read of the server (and of the bench) around the idle streams.
#[derive(Debug)]
struct Figures {
    opened_in: Duration,
    rss_before: u64,
    rss_open: u64,
    rss_after_toggles: u64,
    /// Cores the server used while the streams were idle.
    idle_cores: Option<f64>,
    /// The bench process's resident memory with the streams open.
    reader_rss: Option<u64>,
    /// CPU per toggle over the toggles, in ms: the server's, and the streams' reader's.
    toggle_cpu_ms: (Option<f64>, Option<f64>),
    /// Cores the machine's other processes used over the toggles (they compete for the cores).
    other_cores: Option<f64>,
    put_bytes: usize,
    delays: Delays,
}

fn measure(runtime: &tokio::runtime::Runtime, server: &Flagsvc, limit: &str) -> Result<Outcome> {
    let owner = setup::owner(server);
    let key = setup::seed_project(runtime, &owner, PROJECT, FLAGS)?;
    let flag = setup::flag_key(PROJECT, 0);
    // A poll builds the environment's snapshot and payload, so that what the streams add is
    // what is measured.
    let reader = Target {
        token: key.clone(),
        ..owner.clone()
    };
    let poll = runtime.block_on(reader.send(&Request::get("/sdk/latest-all")))?;
    if poll.status != 200 {
        bail!("GET /sdk/latest-all answered {}", poll.status);
    }
    let pid = server.pid();
    let rss = || procfs::rss_kib(pid).context("reading the server's VmRSS");
    let ticks = procfs::clock_ticks_per_second()?;
    let rss_before = rss()?;
    let figures = runtime.block_on(async {
        let (watchers, opened_in) =
            watch::open(&[server.address], STREAMS, (&key, &flag), WAVE).await?;
        println!(
            "  {STREAMS} streams opened in {:.1} s",
            opened_in.as_secs_f64()
        );
        tokio::time::sleep(SETTLE).await;
        let rss_open = rss()?;
        let reader_rss = procfs::rss_kib(std::process::id());
        let idle_from = (procfs::process_ticks(pid), Instant::now());
        tokio::time::sleep(IDLE).await;
        let idle_cores = idle_from
            .0
            .zip(procfs::process_ticks(pid))
            .map(|(b, a)| (a - b) as f64 / ticks / idle_from.1.elapsed().as_secs_f64());
        let cpu_before = (procfs::process_ticks(pid), procfs::own_ticks());
        let machine_before = (procfs::machine_busy_ticks(), Instant::now());
        let toggles = setup::toggle_in_thread(Toggles {
            target: owner.clone(),
            project: PROJECT.into(),
            flag: flag.clone(),
            count: TOGGLES,
            pause,
        })?;
        let toggled = setup::join(toggles).await??;
        tokio::time::sleep(SETTLE).await;
        let per_toggle = |before: Option<u64>, after: Option<u64>| {
            Some((after? - before?) as f64 / ticks * 1000.0 / TOGGLES as f64)
        };
        let cpu_after = (procfs::process_ticks(pid), procfs::own_ticks());
        let toggle_cpu_ms = (
            per_toggle(cpu_before.0, cpu_after.0),
            per_toggle(cpu_before.1, cpu_after.1),
        );
        let other_cores = (|| {
            let ours = (cpu_after.0? - cpu_before.0?) + (cpu_after.1? - cpu_before.1?);
            let all = procfs::machine_busy_ticks()? - machine_before.0?;
            Some(all.saturating_sub(ours) as f64 / ticks / machine_before.1.elapsed().as_secs_f64())
        })();
        Ok::<_, anyhow::Error>(Figures {
            toggle_cpu_ms,
            other_cores,
            opened_in,
            rss_before,
            rss_open,
            rss_after_toggles: rss()?,
            idle_cores,
            reader_rss,
            put_bytes: poll.body.len() + 40,
            delays: Delays::measure(&toggled, &watchers, 1),
        })
    })?;
    Ok(report(&figures, limit))
}

fn report(f: &Figures, limit: &str) -> Outcome {
    let per_stream = f.rss_open.saturating_sub(f.rss_before) as f64 / STREAMS as f64;
    let p99 = f.delays.p(0.99);
    let idle = f
        .idle_cores
        .map_or("n/a".into(), |c| format!("{:.2} % of a core", c * 100.0));
    let measured = format!(
        "server RSS {:.1} MiB before, {:.1} MiB with {STREAMS} idle streams open: {per_stream:.1} KiB per stream; CPU while idle ({} s): {idle}; {TOGGLES} toggles 1 s apart to every stream: from the API's answer, p50 {}, p99 {}, max {} ({} arrived before the answer, counted 0); from sending the toggle, p99 {}",
        f.rss_before as f64 / 1024.0,
        f.rss_open as f64 / 1024.0,
        IDLE.as_secs(),
        ms(f.delays.p(0.50)),
        ms(p99),
        ms(f.delays.p(1.0)),
        f.delays.before_answer,
        ms(setup::percentile(&f.delays.from_send_us, 0.99)),
    );
    let memory_met = per_stream <= GOAL_KIB_PER_STREAM;
    let delay_met = p99 as f64 / 1000.0 <= GOAL_P99_MS && f.delays.is_clean();
    let met = |ok: bool| if ok { "met" } else { "missed" };
    println!("  {measured}");
    println!("  faults: {}", f.delays.faults());
    let mut outcome = Outcome {
        rows: vec![StreamRow {
            case: "stream-idle-10k".into(),
            store: "SQLite",
            measured,
            goal: format!(
                "≤ {GOAL_KIB_PER_STREAM:.0} KiB per stream: {}; p99 ≤ {GOAL_P99_MS:.0} ms to all: {}",
                met(memory_met),
                met(delay_met)
            ),
        }],
        notes: vec![format!(
            "stream-idle-10k: {STREAMS} streams opened in {:.1} s, {WAVE} connecting at once, each first read a `put` of about {} bytes; server RSS {:.1} MiB after the toggles; per-toggle max {}, {}; {}; CPU per toggle (over the toggles and {} s after): flagsvc {} ms, the streams' reader {} ms, other processes of the machine {} cores meanwhile; the bench's own RSS with the streams open (their client side, not counted above): {}; {limit}; default `--sdk-heartbeat-secs 60` (no heartbeat fell in the idle window); {}.",
            f.opened_in.as_secs_f64(),
            f.put_bytes,
            f.rss_after_toggles as f64 / 1024.0,
            f.delays
                .toggle_max_us
                .iter()
                .map(|&us| ms(us))
                .collect::<Vec<_>>()
                .join(", "),
            if f.delays.by_put > 0 {
                format!("{} deliveries by a `put`", f.delays.by_put)
            } else {
                "every delivery a `patch`".into()
            },
            f.delays.answers(),
            SETTLE.as_secs(),
            f.toggle_cpu_ms.0.map_or("n/a".into(), |v| format!("{v:.0}")),
            f.toggle_cpu_ms.1.map_or("n/a".into(), |v| format!("{v:.0}")),
            f.other_cores.map_or("n/a".into(), |v| format!("{v:.2}")),
            f.reader_rss
                .map_or("n/a".into(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0)),
            f.delays.faults()
        )],
        broken: vec![],
    };
    if !f.delays.is_clean() {
        outcome
            .broken
            .push(format!("stream-idle-10k: {}", f.delays.faults()));
    }
    outcome
}
