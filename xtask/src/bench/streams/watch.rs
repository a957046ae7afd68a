//! Streams that watch one flag: each is a task on the bench's runtime (one thread for them
//! all) that keeps its `GET /all` open and notes every version of the flag that arrives, with
//! when it arrived; and the delays from each toggle's answer to its arrival on every stream.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use tokio::task::JoinHandle;

use super::setup::{ms, percentile, Toggled};
use super::sse::{self, Kind, Opened};

/// How long a wave of streams may take to open before the case gives up.
const OPEN_TIMEOUT: Duration = Duration::from_secs(60);

/// What one stream saw.
#[derive(Debug, Default)]
pub struct Watched {
    /// When its first `put` arrived.
    pub put_at: Option<Instant>,
    /// The watched flag's versions as they arrived: version, arrival, whether by a `put`.
    pub deliveries: Vec<(u64, Instant, bool)>,
    /// `put`s after the first.
    pub later_puts: u64,
    /// Events about other items.
    pub other_events: u64,
    /// Why it ended or could not open, if it did.
    pub ended: Option<String>,
}

/// One watching stream.
#[derive(Debug)]
pub struct Watcher {
    /// Which of the addresses it reads.
    pub replica: usize,
    pub log: Arc<Mutex<Watched>>,
    task: JoinHandle<()>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(log: &Mutex<Watched>) -> std::sync::MutexGuard<'_, Watched> {
    log.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The watched flag's version in a `put`'s data.
fn version_in_put(data: &str, flag: &str) -> Option<u64> {
    let put: serde_json::Value = serde_json::from_str(data).ok()?;
    put["data"]["flags"][flag]["version"].as_u64()
}

async fn watch(address: SocketAddr, key: String, flag: Arc<str>, log: Arc<Mutex<Watched>>) {
    let path = format!("/flags/{flag}");
    let mut stream = match sse::open(address, &key).await {
        Ok(Opened::Stream(stream)) => stream,
        Ok(Opened::Refused { status, body }) => {
            lock(&log).ended = Some(format!("refused with {status}: {body}"));
            return;
        }
        Err(e) => {
            lock(&log).ended = Some(format!("{e:#}"));
            return;
        }
    };
    loop {
        let event = match stream.next_event().await {
            Ok(Some(event)) => event,
            Ok(None) => {
                lock(&log).ended = Some("the server ended the stream".into());
                return;
            }
            Err(e) => {
                lock(&log).ended = Some(format!("{e:#}"));
                return;
            }
        };
        let mut log = lock(&log);
        match event.kind {
            Kind::Put if log.put_at.is_none() => log.put_at = Some(event.arrived),
            Kind::Put => {
                log.later_puts += 1;
                if let Some(version) = version_in_put(&event.data, &flag) {
                    log.deliveries.push((version, event.arrived, true));
                }
            }
            Kind::Patch | Kind::Delete => match sse::path_and_version(&event.data) {
                Some((p, version)) if p == path => {
                    log.deliveries.push((version, event.arrived, false));
                }
                _ => log.other_events += 1,
            },
            Kind::Other => log.other_events += 1,
        }
    }
}

/// Opens `count` streams with `key`, stream `i` on `addresses[i % len]`, `wave` at a time
/// (each wave's first `put`s read before the next wave connects); how long it took. Streams
/// that could not open are in the result with their `ended`.
pub async fn open(
    addresses: &[SocketAddr],
    count: usize,
    (key, flag): (&str, &str),
    wave: usize,
) -> Result<(Vec<Watcher>, Duration)> {
    let started = Instant::now();
    let flag: Arc<str> = Arc::from(flag);
    let mut watchers: Vec<Watcher> = Vec::with_capacity(count);
    while watchers.len() < count {
        let first = watchers.len();
        for i in first..(first + wave).min(count) {
            let log = Arc::new(Mutex::new(Watched::default()));
            let replica = i % addresses.len();
            let task = tokio::spawn(watch(
                addresses[replica],
                key.to_owned(),
                flag.clone(),
                log.clone(),
            ));
            watchers.push(Watcher { replica, log, task });
        }
        let wave_started = Instant::now();
        while watchers[first..].iter().any(|w| {
            let log = lock(&w.log);
            log.put_at.is_none() && log.ended.is_none()
        }) {
            if wave_started.elapsed() > OPEN_TIMEOUT {
                bail!("streams {first}.. did not all get their first put within {OPEN_TIMEOUT:?}");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    Ok((watchers, started.elapsed()))
}

/// The delays of a run of toggles on every stream.
#[derive(Debug, Default)]
pub struct Delays {
    /// Every (toggle, stream) delay, in µs, sorted; an arrival before the answer counts 0.
    pub all_us: Vec<u64>,
    /// Every (toggle, stream) delay from the toggle's request being sent, in µs, sorted.
    pub from_send_us: Vec<u64>,
    /// The delays from the answer by replica.
    pub by_replica_us: Vec<Vec<u64>>,
    /// How long each toggle's request took to be answered, in µs, sorted.
    pub answer_us: Vec<u64>,
    /// Each toggle's slowest stream, in µs, sorted.
    pub toggle_max_us: Vec<u64>,
    /// (toggle, stream) pairs whose version never arrived.
    pub missing: usize,
    /// Pairs whose version arrived before the toggle's answer was read.
    pub before_answer: usize,
    /// Pairs whose version arrived in a `put` rather than a `patch`.
    pub by_put: usize,
    /// Pairs whose version never arrived but a later one did (in a `patch`).
    pub skipped: usize,
    /// Versions a stream received that were not above the one before (duplicates, or order
    /// going back).
    pub not_increasing: usize,
    /// Versions that no toggle answered (a change the bench did not make).
    pub unexpected: usize,
    /// Streams that ended or never opened, with a sample reason.
    pub ended: usize,
    pub ended_sample: Option<String>,
}

impl Delays {
    pub fn p(&self, quantile: f64) -> u64 {
        percentile(&self.all_us, quantile)
    }

    /// Delays of the watchers' logs for `toggles`, over `replicas` replicas.
    pub fn measure(toggles: &[Toggled], watchers: &[Watcher], replicas: usize) -> Delays {
        let mut delays = Delays {
            by_replica_us: vec![vec![]; replicas],
            ..Delays::default()
        };
        let mut toggle_max = vec![0u64; toggles.len()];
        for watcher in watchers {
            let log = lock(&watcher.log);
            if let Some(why) = &log.ended {
                delays.ended += 1;
                delays.ended_sample.get_or_insert_with(|| why.clone());
            }
            let versions: Vec<u64> = log.deliveries.iter().map(|d| d.0).collect();
            delays.not_increasing += versions.windows(2).filter(|w| w[1] <= w[0]).count();
            delays.unexpected += versions
                .iter()
                .filter(|v| !toggles.iter().any(|t| t.version == **v))
                .count();
            for (j, toggle) in toggles.iter().enumerate() {
                let Some(&(version, arrived, by_put)) =
                    log.deliveries.iter().find(|d| d.0 >= toggle.version)
                else {
                    delays.missing += 1;
                    continue;
                };
                delays.by_put += usize::from(by_put);
                delays.skipped += usize::from(!by_put && version != toggle.version);
                let delay = match arrived.checked_duration_since(toggle.answered) {
                    Some(delay) => delay.as_micros() as u64,
                    None => {
                        delays.before_answer += 1;
                        0
                    }
                };
                delays.all_us.push(delay);
                let from_send = arrived.saturating_duration_since(toggle.sent);
                delays.from_send_us.push(from_send.as_micros() as u64);
                delays.by_replica_us[watcher.replica].push(delay);
                toggle_max[j] = toggle_max[j].max(delay);
            }
        }
        delays.all_us.sort_unstable();
        delays.from_send_us.sort_unstable();
        for replica in &mut delays.by_replica_us {
            replica.sort_unstable();
        }
        toggle_max.sort_unstable();
        delays.answer_us = toggles
            .iter()
            .map(|t| (t.answered - t.sent).as_micros() as u64)
            .collect();
        delays.answer_us.sort_unstable();
        delays.toggle_max_us = toggle_max;
        delays
    }

    /// The toggles' answer times: median and slowest.
    pub fn answers(&self) -> String {
        format!(
            "the toggles were answered in {} (median), {} (slowest)",
            ms(percentile(&self.answer_us, 0.5)),
            ms(percentile(&self.answer_us, 1.0))
        )
    }

    /// Whether every pair was delivered, in order, and nothing else arrived.
    pub fn is_clean(&self) -> bool {
        self.missing == 0
            && self.skipped == 0
            && self.not_increasing == 0
            && self.unexpected == 0
            && self.ended == 0
    }

    /// The faults, for the report.
    pub fn faults(&self) -> String {
        format!(
            "{} (toggle, stream) pairs missing, {} skipped (a later version came instead), {} versions not above the one before, {} versions no toggle made, {} streams ended{}",
            self.missing,
            self.skipped,
            self.not_increasing,
            self.unexpected,
            self.ended,
            self.ended_sample
                .as_ref()
                .map_or(String::new(), |why| format!(" (e.g. {why})"))
        )
    }
}
