//! The load generator: N keep-alive connections, each a closed loop that sends the case's next
//! request and waits for its answer. A timed load has a warm-up (sent, not recorded) and then a
//! measured window; a counted load sends a fixed number of requests and measures all of them.
//! CPU of the server, of PostgreSQL and of the generator itself is sampled at the edges of the
//! measured window.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::time::Instant;

use super::http::{Connection, Request, Response};
use super::procfs;

/// A request that takes longer than this counts as failed (status 0), so that a server that
/// stops answering fails the run instead of hanging it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a long counted load (seeding) prints its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The server under load and the processes whose CPU is counted.
#[derive(Debug, Clone)]
pub struct Target {
    pub address: SocketAddr,
    pub token: String,
    pub server_pid: u32,
    pub postmaster_pid: Option<u32>,
}

impl Target {
    /// One request on a connection of its own, for set-up and checks.
    pub async fn send(&self, request: &Request) -> Result<Response> {
        Connection::new(self.address, &self.token)
            .send(request)
            .await
            .with_context(|| format!("{} {}", request.method, request.path))
    }
}

#[derive(Debug, Clone, Copy)]
pub enum Length {
    /// Requests for `warmup`, then for `duration`; only the second part is measured.
    Timed {
        warmup: Duration,
        duration: Duration,
    },
    /// This many requests shared among the connections (each takes the next number).
    Total(u64),
    /// This many requests on each connection (connection c sends numbers c·n .. c·n + n).
    PerConnection(u64),
}

/// Makes request number `n` of a load (numbers count from 0 over the whole load, warm-up
/// included, so that a body built from it is unique, e.g. a new flag's key).
pub type MakeRequest = Arc<dyn Fn(u64) -> Request + Send + Sync>;

#[derive(Debug)]
pub struct Load {
    pub connections: usize,
    pub length: Length,
    /// Printed with the progress of a long load (seeding); `None` prints nothing.
    pub progress: Option<String>,
}

/// CPU used during the measured window, in clock ticks.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuUse {
    pub server: Option<u64>,
    pub postgres: Option<u64>,
    pub load_generator: Option<u64>,
    /// Every process of the machine: what is left after the three above is other work that
    /// competed for the cores (another build, say) and makes the figures less reliable.
    pub machine: Option<u64>,
}

impl CpuUse {
    /// CPU of processes other than the server, PostgreSQL and the load generator.
    pub fn others(&self) -> Option<u64> {
        let ours = self.server? + self.postgres.unwrap_or(0) + self.load_generator?;
        Some(self.machine?.saturating_sub(ours))
    }
}

#[derive(Debug, Clone, Copy)]
struct CpuSample {
    server: Option<u64>,
    postgres: Option<u64>,
    load_generator: Option<u64>,
    machine: Option<u64>,
}

impl CpuSample {
    fn take(target: &Target) -> CpuSample {
        CpuSample {
            server: procfs::process_ticks(target.server_pid),
            postgres: target.postmaster_pid.and_then(procfs::postgres_ticks),
            load_generator: procfs::own_ticks(),
            machine: procfs::machine_busy_ticks(),
        }
    }

    fn until(self, end: CpuSample) -> CpuUse {
        let delta = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
        CpuUse {
            server: delta(self.server, end.server),
            postgres: delta(self.postgres, end.postgres),
            load_generator: delta(self.load_generator, end.load_generator),
            machine: delta(self.machine, end.machine),
        }
    }
}

/// Responses that were not 2xx (or not the status the request expects), by status (0: no response: a connection error or a timeout).
#[derive(Debug, Default)]
pub struct Failures {
    pub by_status: BTreeMap<u16, u64>,
    /// The first body (or error) seen for each status.
    pub samples: BTreeMap<u16, String>,
}

impl Failures {
    fn record(&mut self, status: u16, sample: impl FnOnce() -> String) {
        *self.by_status.entry(status).or_default() += 1;
        self.samples.entry(status).or_insert_with(sample);
    }

    fn merge(&mut self, other: Failures) {
        for (status, count) in other.by_status {
            *self.by_status.entry(status).or_default() += count;
        }
        for (status, sample) in other.samples {
            self.samples.entry(status).or_insert(sample);
        }
    }

    pub fn count(&self) -> u64 {
        self.by_status.values().sum()
    }

    /// The most common failing status, its count and a sample body.
    pub fn most_common(&self) -> Option<(u16, u64, &str)> {
        let (&status, &count) = self.by_status.iter().max_by_key(|(_, &count)| count)?;
        let sample = self.samples.get(&status).map_or("", String::as_str);
        Some((status, count, sample))
    }
}

#[derive(Debug)]
pub struct Measured {
    /// Requests sent in the measured window (answered or failed).
    pub requests: u64,
    pub window: Duration,
    /// Latency of each request of the window, in microseconds, sorted.
    pub latencies_us: Vec<u64>,
    pub failures: Failures,
    /// The numbers of the requests that failed (for seeding to send them again).
    pub failed_numbers: Vec<u64>,
    pub cpu: CpuUse,
}

impl Measured {
    pub fn per_second(&self) -> f64 {
        self.requests as f64 / self.window.as_secs_f64().max(1e-9)
    }

    /// The latency below which `quantile` (0..1) of the requests were answered (nearest rank).
    pub fn percentile_us(&self, quantile: f64) -> u64 {
        if self.latencies_us.is_empty() {
            return 0;
        }
        let rank = (quantile * self.latencies_us.len() as f64).ceil() as usize;
        self.latencies_us[rank.clamp(1, self.latencies_us.len()) - 1]
    }

    /// The share of requests that were not 2xx.
    pub fn failure_share(&self) -> f64 {
        self.failures.count() as f64 / self.requests.max(1) as f64
    }
}

/// What one connection recorded.
#[derive(Debug, Default)]
struct Recorded {
    latencies_us: Vec<u64>,
    failures: Failures,
    failed_numbers: Vec<u64>,
}

/// The number of the next request a connection sends, `None` when it is done: the shared
/// counter's next (timed or counted loads), or the connection's own run of numbers.
fn request_number(
    length: Length,
    stop_at: Option<Instant>,
    next_number: &AtomicU64,
    index: usize,
    sent_here: u64,
) -> Option<u64> {
    match length {
        Length::Timed { .. } => {
            if stop_at.is_some_and(|stop| Instant::now() >= stop) {
                return None;
            }
            Some(next_number.fetch_add(1, Ordering::Relaxed))
        }
        Length::Total(total) => {
            let number = next_number.fetch_add(1, Ordering::Relaxed);
            (number < total).then_some(number)
        }
        Length::PerConnection(each) => (sent_here < each).then(|| index as u64 * each + sent_here),
    }
}

impl Recorded {
    /// Records one measured request: its latency, and why it failed when it did.
    fn record(
        &mut self,
        (number, request): (u64, &Request),
        latency: std::time::Duration,
        outcome: Result<Result<Response>, tokio::time::error::Elapsed>,
    ) {
        self.latencies_us.push(latency.as_micros() as u64);
        if !matches!(&outcome, Ok(Ok(response)) if request.is_answered_by(response)) {
            self.failed_numbers.push(number);
        }
        match outcome {
            Ok(Ok(response)) if request.is_answered_by(&response) => {}
            Ok(Ok(response)) => self
                .failures
                .record(response.status, || response.body_sample()),
            Ok(Err(error)) => self.failures.record(0, || format!("{error:#}")),
            Err(_) => self
                .failures
                .record(0, || format!("no answer within {REQUEST_TIMEOUT:?}")),
        }
    }
}

/// Runs a load against the target and measures it.
pub async fn run(target: &Target, load: &Load, make_request: MakeRequest) -> Result<Measured> {
    let started = Instant::now();
    let (measure_from, stop_at) = match load.length {
        Length::Timed { warmup, duration } => (started + warmup, Some(started + warmup + duration)),
        Length::Total(_) | Length::PerConnection(_) => (started, None),
    };
    let next_number = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let progress = load
        .progress
        .clone()
        .map(|label| tokio::spawn(print_progress(label, load.length, answered.clone())));

    let mut connections = Vec::with_capacity(load.connections);
    for index in 0..load.connections {
        let mut connection = Connection::new(target.address, &target.token);
        let length = load.length;
        let next_number = next_number.clone();
        let answered = answered.clone();
        let make_request = make_request.clone();
        connections.push(tokio::spawn(async move {
            let mut recorded = Recorded::default();
            let mut sent_here = 0u64;
            while let Some(number) = request_number(length, stop_at, &next_number, index, sent_here)
            {
                sent_here += 1;
                let request = make_request(number);
                let sent_at = Instant::now();
                let outcome =
                    tokio::time::timeout(REQUEST_TIMEOUT, connection.send(&request)).await;
                let latency = sent_at.elapsed();
                answered.fetch_add(1, Ordering::Relaxed);
                if sent_at < measure_from {
                    continue; // warm-up
                }
                recorded.record((number, &request), latency, outcome);
            }
            recorded
        }));
    }

    tokio::time::sleep_until(measure_from).await;
    let at_start = CpuSample::take(target);
    let window_start = Instant::now();
    // A timed window ends at its stop time (requests still in flight then finish outside it); a
    // counted one when the last connection is done.
    let mut at_stop = None;
    if let Some(stop_at) = stop_at {
        tokio::time::sleep_until(stop_at).await;
        at_stop = Some(CpuSample::take(target));
    }
    let mut all = Recorded::default();
    for connection in connections {
        let recorded = connection.await.context("a load connection panicked")?;
        all.latencies_us.extend(recorded.latencies_us);
        all.failures.merge(recorded.failures);
        all.failed_numbers.extend(recorded.failed_numbers);
    }
    let at_end = at_stop.unwrap_or_else(|| CpuSample::take(target));
    let window_end = Instant::now();
    if let Some(progress) = progress {
        progress.abort();
    }
    let window = match stop_at {
        Some(stop_at) => stop_at - measure_from,
        None => window_end - window_start,
    };
    all.latencies_us.sort_unstable();
    all.failed_numbers.sort_unstable();
    Ok(Measured {
        requests: all.latencies_us.len() as u64,
        window,
        latencies_us: all.latencies_us,
        failures: all.failures,
        failed_numbers: all.failed_numbers,
        cpu: at_start.until(at_end),
    })
}

async fn print_progress(label: String, length: Length, answered: Arc<AtomicU64>) {
    let total = match length {
        Length::Total(total) => Some(total),
        Length::Timed { .. } | Length::PerConnection(_) => None,
    };
    let started = Instant::now();
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let done = answered.load(Ordering::Relaxed);
        let rate = done as f64 / started.elapsed().as_secs_f64();
        match total {
            Some(total) => println!("  {label}: {done}/{total} ({rate:.0}/s)"),
            None => println!("  {label}: {done} ({rate:.0}/s)"),
        }
    }
}
