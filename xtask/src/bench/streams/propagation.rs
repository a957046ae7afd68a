//! Case `stream-propagation` (issue 35): two replicas on one PostgreSQL database, 1,000 open
//! `GET /all` streams split between them, and a flag toggled through replica A's API, one
//! toggle at a time: the delay from each toggle's answer to its `patch` on every stream. On A
//! the change reaches the streams from its own commit; on B through PostgreSQL's
//! `LISTEN`/`NOTIFY` feed.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Result};

use super::setup::{self, ms, Outcome, Toggles};
use super::watch::{self, Delays};
use crate::bench::procfs;
use crate::bench::report::StreamRow;

const PROJECT: &str = "stream";
/// Flags of the project (its `put` stays small).
const FLAGS: u64 = 5;
const STREAMS: usize = 1_000;
const TOGGLES: usize = 80;
/// Streams that connect at once while they are opened.
const WAVE: usize = 250;
/// How long after the last toggle's answer the streams are still read.
const SETTLE: Duration = Duration::from_secs(1);
const GOAL_P99_MS: f64 = 50.0;

/// 100 to 200 ms before toggle `i`, spread evenly (no pattern in step with a timer).
fn pause(i: usize) -> Duration {
    Duration::from_millis(100 + (i as u64 * 37) % 101)
}

pub fn run(
    runtime: &tokio::runtime::Runtime,
    binary: &Path,
    database_url: &str,
    work_dir: &Path,
) -> Result<Outcome> {
    println!("\nstream-propagation:");
    let a = setup::replica(runtime, binary, (database_url, work_dir), "stream-a", &[])?;
    let b = setup::replica(runtime, binary, (database_url, work_dir), "stream-b", &[])?;
    let owner = setup::owner(&a);
    let key = setup::seed_project(runtime, &owner, PROJECT, FLAGS)?;
    let flag = setup::flag_key(PROJECT, 0);
    let addresses = setup::addresses(&[&a, &b]);
    let ticks = procfs::clock_ticks_per_second()?;

    let (delays, opened_in, cpu) = runtime.block_on(async {
        let (watchers, opened_in) =
            watch::open(&addresses, STREAMS, (&key, &flag), WAVE).await?;
        let refused = watchers
            .iter()
            .filter(|w| w.log.lock().is_ok_and(|l| l.ended.is_some()))
            .count();
        if refused > 0 {
            bail!("{refused} of {STREAMS} streams did not open");
        }
        let before = [a.pid(), b.pid()].map(procfs::process_ticks);
        let own_before = procfs::own_ticks();
        let toggles = setup::toggle_in_thread(Toggles {
            target: owner.clone(),
            project: PROJECT.into(),
            flag: flag.clone(),
            count: TOGGLES,
            pause,
        })?;
        let toggled = setup::join(toggles).await??;
        tokio::time::sleep(SETTLE).await;
        let after = [a.pid(), b.pid()].map(procfs::process_ticks);
        let own_after = procfs::own_ticks();
        let cores = |before: Option<u64>, after: Option<u64>| -> String {
            let window = toggled.last().zip(toggled.first()).map_or(1.0, |(l, f)| {
                (l.answered - f.answered).as_secs_f64().max(1.0)
            });
            match (before, after) {
                (Some(b), Some(a)) => format!("{:.0} %", (a - b) as f64 / ticks / window * 100.0),
                _ => "n/a".into(),
            }
        };
        let cpu = format!(
            "CPU over the toggles (share of a core): replica A {}, replica B {}, the streams' reader {}",
            cores(before[0], after[0]),
            cores(before[1], after[1]),
            cores(own_before, own_after)
        );
        Ok((Delays::measure(&toggled, &watchers, 2), opened_in, cpu))
    })?;
    drop((a, b));
    Ok(report(&delays, opened_in, cpu))
}

fn report(delays: &Delays, opened_in: Duration, cpu: String) -> Outcome {
    let p99 = delays.p(0.99);
    let measured = format!(
        "{STREAMS} streams (half on each replica), {TOGGLES} toggles through A's API 100–200 ms apart: from the API's answer to the `patch`, p50 {}, p99 {}, max {} over {} (toggle, stream) pairs ({} arrived before the answer, counted 0); from sending the toggle, p50 {}, p99 {}; replica A p99 {}, replica B (through PostgreSQL) p99 {}; per-toggle max: median {}, worst {}",
        ms(delays.p(0.50)),
        ms(p99),
        ms(delays.p(1.0)),
        delays.all_us.len(),
        delays.before_answer,
        ms(setup::percentile(&delays.from_send_us, 0.50)),
        ms(setup::percentile(&delays.from_send_us, 0.99)),
        ms(setup::percentile(&delays.by_replica_us[0], 0.99)),
        ms(setup::percentile(&delays.by_replica_us[1], 0.99)),
        ms(setup::percentile(&delays.toggle_max_us, 0.50)),
        ms(setup::percentile(&delays.toggle_max_us, 1.0)),
    );
    let met = p99 as f64 / 1000.0 <= GOAL_P99_MS && delays.is_clean();
    println!("  {measured}");
    println!("  {cpu}");
    println!("  faults: {}", delays.faults());
    let mut outcome = Outcome {
        rows: vec![StreamRow {
            case: "stream-propagation".into(),
            store: "PostgreSQL",
            measured,
            goal: format!(
                "p99 ≤ {GOAL_P99_MS:.0} ms, every toggle on every stream: {}",
                if met { "met" } else { "missed" }
            ),
        }],
        notes: vec![format!(
            "stream-propagation: {STREAMS} streams opened in {:.1} s; {cpu}; {}; {} delivered by a `put` instead of a `patch`; {}.",
            opened_in.as_secs_f64(),
            delays.answers(),
            delays.by_put,
            delays.faults()
        )],
        broken: vec![],
    };
    if !delays.is_clean() {
        outcome
            .broken
            .push(format!("stream-propagation: {}", delays.faults()));
    }
    outcome
}
