//! Case `stream-chaos` (issue 35): two replicas on one PostgreSQL database, SDK-like clients
//! on each (`sdk_client`), and writes through the API (toggles, target changes, flags created
//! and deleted, keys created again after their deletion) for a while; meanwhile PostgreSQL is
//! restarted once (the bench's throwaway cluster only) and replica B is killed with SIGKILL,
//! its clients moving to A. Once the writes stop and the streams settle, every client's store
//! must equal A's `GET /sdk/latest-all`, and no event may have come with a version not above
//! the one its client held in that connection. A replica started afterwards on the same
//! database must serve what A serves.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::sdk_client::{self, lock, ClientLog};
use super::setup::{self, Outcome};
use crate::bench::http::{Request, JSON};
use crate::bench::load::Target;
use crate::bench::report::StreamRow;
use crate::bench::server::Flagsvc;
use crate::postgres;

const PROJECT: &str = "chaos";
const FLAGS: u64 = 20;
const CLIENTS_PER_REPLICA: usize = 60;
const WRITERS: usize = 2;
/// Writes flow this long; PostgreSQL restarts and B dies at these moments of it.
const WRITING: Duration = Duration::from_secs(20);
const RESTART_AT: Duration = Duration::from_secs(6);
const KILL_AT: Duration = Duration::from_secs(13);
/// From the last write to the comparison.
const SETTLE: Duration = Duration::from_secs(2);
/// Between one writer's writes.
const WRITE_PAUSE: Duration = Duration::from_millis(20);
/// Keys of the flags a writer creates and deletes (each created again after its deletion).
const TEMPORARY_KEYS: usize = 8;
/// The longest a write may take before it counts as failed.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How the bench's throwaway cluster is restarted (`pg_ctl restart`).
#[derive(Debug, Clone)]
pub struct Restart {
    pg_ctl: PathBuf,
    data_dir: PathBuf,
    as_postgres: bool,
}

impl Restart {
    /// `None` for a server the bench did not start (`DATABASE_URL`): it is not restarted.
    pub fn of(server: &postgres::Server) -> Option<Restart> {
        match server {
            postgres::Server::Existing { .. } => None,
            postgres::Server::Throwaway {
                data_dir,
                pg_ctl,
                as_postgres,
                ..
            } => Some(Restart {
                pg_ctl: pg_ctl.clone(),
                data_dir: data_dir.clone(),
                as_postgres: *as_postgres,
            }),
        }
    }

    /// `pg_ctl restart -m fast -w`: every connection is cut; how long it took.
    fn run(&self) -> Result<Duration> {
        let started = Instant::now();
        let dir = self.data_dir.display().to_string();
        let log = self.data_dir.with_file_name("postgres.log");
        let args = ["-D", &dir, "-m", "fast", "-w", "-l"];
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(&self.pg_ctl);
            command
        } else {
            Command::new(&self.pg_ctl)
        };
        let output = command
            .args(args)
            .arg(&log)
            .arg("restart")
            .output()
            .context("running pg_ctl restart")?;
        if !output.status.success() {
            bail!(
                "pg_ctl restart failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(started.elapsed())
    }
}

/// What the writers did.
#[derive(Debug, Default)]
struct Writes {
    succeeded: u64,
    /// Failed writes by status (0: no answer), with a sample.
    failed: BTreeMap<u16, (u64, String)>,
}

impl Writes {
    fn merge(&mut self, other: Writes) {
        self.succeeded += other.succeeded;
        for (status, (count, sample)) in other.failed {
            self.failed.entry(status).or_insert((0, sample)).0 += count;
        }
    }

    fn failures(&self) -> String {
        if self.failed.is_empty() {
            return "none".into();
        }
        let parts: Vec<String> = self
            .failed
            .iter()
            .map(|(status, (count, sample))| {
                let sample: String = sample.chars().take(100).collect();
                format!("{count} × {status} ({sample})")
            })
            .collect();
        parts.join("; ")
    }
}

/// A writer's next write: the request, and the temporary key it creates or deletes.
enum Write {
    Plain(Request),
    Create(usize, Request),
    Delete(usize, Request),
}

fn temporary_key(writer: usize, k: usize) -> String {
    format!("tmp-{writer}-{k}")
}

/// Write `n` of writer `writer`, given its temporary flags alive now.
fn next_write(writer: usize, n: u64, alive: &VecDeque<usize>) -> Write {
    let flag = |offset: u64| setup::flag_key(PROJECT, (n / 4 + offset) % FLAGS);
    match n % 4 {
        1 => {
            let patch = json!([{"op": "add", "path": "/environments/production/targets/0/values/-",
                                "value": format!("w{writer}-{n}")}]);
            let path = format!("/api/v2/flags/{PROJECT}/{}", flag(7));
            Write::Plain(Request::with_body("PATCH", path, JSON, patch.to_string()))
        }
        2 => match (0..TEMPORARY_KEYS)
            .map(|i| (n as usize / 4 + i) % TEMPORARY_KEYS)
            .find(|k| !alive.contains(k))
        {
            Some(k) => {
                let key = temporary_key(writer, k);
                let body = json!({"key": key, "name": key});
                let path = format!("/api/v2/flags/{PROJECT}");
                Write::Create(k, Request::with_body("POST", path, JSON, body.to_string()))
            }
            None => Write::Plain(setup::toggle(PROJECT, &flag(3), n % 8 == 2)),
        },
        3 => match alive.front() {
            Some(&k) => {
                let path = format!("/api/v2/flags/{PROJECT}/{}", temporary_key(writer, k));
                Write::Delete(
                    k,
                    Request {
                        method: "DELETE",
                        ..Request::get(path)
                    },
                )
            }
            None => Write::Plain(setup::toggle(PROJECT, &flag(5), n % 8 == 3)),
        },
        _ => Write::Plain(setup::toggle(
            PROJECT,
            &flag(0),
            (n / 4 / FLAGS).is_multiple_of(2),
        )),
    }
}

/// Writer `writer` until `stop`: on replica `writer % len` while it answers, then on A.
async fn write(writer: usize, replicas: Vec<Target>, stop: Arc<AtomicBool>) -> Writes {
    let mut writes = Writes::default();
    let mut replica = writer % replicas.len();
    let mut alive: VecDeque<usize> = VecDeque::new();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let write = next_write(writer, n, &alive);
        n += 1;
        let request = match &write {
            Write::Plain(r) | Write::Create(_, r) | Write::Delete(_, r) => r,
        };
        let answer = tokio::time::timeout(WRITE_TIMEOUT, replicas[replica].send(request)).await;
        let status = match answer {
            Ok(Ok(response)) => {
                if !response.is_success() {
                    let sample = response.body_sample();
                    writes
                        .failed
                        .entry(response.status)
                        .or_insert((0, sample))
                        .0 += 1;
                }
                response.status
            }
            Ok(Err(e)) => {
                writes.failed.entry(0).or_insert((0, format!("{e:#}"))).0 += 1;
                replica = 0;
                0
            }
            Err(_) => {
                writes.failed.entry(0).or_insert((0, "timed out".into())).0 += 1;
                0
            }
        };
        writes.succeeded += u64::from((200..300).contains(&status));
        // A create that conflicts, or a delete of a flag not found, finds what an earlier
        // write whose answer was lost did.
        match write {
            Write::Create(k, _) if (200..300).contains(&status) || status == 409 => {
                alive.push_back(k);
            }
            Write::Delete(k, _) if (200..300).contains(&status) || status == 404 => {
                alive.retain(|&a| a != k);
            }
            _ => {}
        }
        tokio::time::sleep(WRITE_PAUSE).await;
    }
    writes
}

/// What happened during the storm, in order.
type Schedule = std::thread::JoinHandle<Result<(Flagsvc, Vec<String>)>>;

/// Restarts PostgreSQL at `RESTART_AT` and kills `b` at `KILL_AT`, in a thread of its own
/// (both block); gives `b` back (dead) with what was done.
fn schedule(restart: Option<Restart>, mut b: Flagsvc) -> Result<Schedule> {
    std::thread::Builder::new()
        .name("bench-chaos".into())
        .spawn(move || {
            let started = Instant::now();
            let mut done = vec![];
            std::thread::sleep(RESTART_AT);
            match restart {
                Some(restart) => {
                    let took = restart.run()?;
                    done.push(format!(
                        "PostgreSQL restarted (`pg_ctl restart -m fast`) at {:.1} s, in {:.1} s",
                        RESTART_AT.as_secs_f64(),
                        took.as_secs_f64()
                    ));
                }
                None => done.push(
                    "PostgreSQL not restarted: it is the existing server named by DATABASE_URL"
                        .into(),
                ),
            }
            std::thread::sleep(KILL_AT.saturating_sub(started.elapsed()));
            b.kill()?;
            done.push(format!(
                "replica B killed (SIGKILL) at {:.1} s",
                started.elapsed().as_secs_f64()
            ));
            Ok((b, done))
        })
        .context("starting the chaos thread")
}

/// Client logs, once every client has its first `put`.
async fn start_clients(
    addresses: &Arc<[SocketAddr]>,
    key: &str,
) -> Result<(Vec<Arc<Mutex<ClientLog>>>, Vec<tokio::task::JoinHandle<()>>)> {
    let key: Arc<str> = Arc::from(key);
    let mut logs = vec![];
    let mut tasks = vec![];
    for id in 0..CLIENTS_PER_REPLICA * addresses.len() {
        let log = Arc::new(Mutex::new(ClientLog::default()));
        tasks.push(tokio::spawn(sdk_client::run(
            id,
            addresses.clone(),
            key.clone(),
            log.clone(),
        )));
        logs.push(log);
    }
    let started = Instant::now();
    while logs.iter().any(|log| lock(log).connections == 0) {
        if started.elapsed() > Duration::from_secs(30) {
            bail!("the chaos clients did not all connect within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok((logs, tasks))
}

/// What the storm leaves for the report.
#[derive(Debug)]
struct Storm {
    writes: Writes,
    done: Vec<String>,
    logs: Vec<Arc<Mutex<ClientLog>>>,
    /// A's `GET /sdk/latest-all` at the end.
    latest: Value,
}

async fn storm(
    (a, b): (&Target, Flagsvc),
    key: &str,
    restart: Option<Restart>,
) -> Result<(Storm, Flagsvc)> {
    let addresses: Arc<[SocketAddr]> = Arc::from(vec![a.address, b.address]);
    let replicas = vec![a.clone(), setup::owner(&b)];
    let (logs, clients) = start_clients(&addresses, key).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| tokio::spawn(write(w, replicas.clone(), stop.clone())))
        .collect();
    let chaos = schedule(restart, b)?;
    tokio::time::sleep(WRITING).await;
    stop.store(true, Ordering::Relaxed);
    let mut writes = Writes::default();
    for writer in writers {
        writes.merge(writer.await.context("a writer panicked")?);
    }
    let (b, done) = setup::join(chaos).await??;
    tokio::time::sleep(SETTLE).await;
    let reader = Target {
        token: key.to_owned(),
        ..a.clone()
    };
    let latest = setup::send_ok(&reader, &Request::get("/sdk/latest-all"))
        .await?
        .json()?;
    for client in clients {
        client.abort();
    }
    let storm = Storm {
        writes,
        done,
        logs,
        latest,
    };
    Ok((storm, b))
}

pub fn run(
    runtime: &tokio::runtime::Runtime,
    binary: &Path,
    (database_url, server): (&str, &postgres::Server),
    work_dir: &Path,
) -> Result<Outcome> {
    println!("\nstream-chaos:");
    let place = (database_url, work_dir);
    let a = setup::replica(runtime, binary, place, "chaos-a", &[])?;
    let b = setup::replica(runtime, binary, place, "chaos-b", &[])?;
    let owner = setup::owner(&a);
    let key = setup::seed_project(runtime, &owner, PROJECT, FLAGS)?;
    let target = json!([{"op": "add", "path": "/environments/production/targets/-",
                         "value": {"values": ["seed"], "variation": 0}}]);
    for n in 0..FLAGS {
        let path = format!("/api/v2/flags/{PROJECT}/{}", setup::flag_key(PROJECT, n));
        let request = Request::with_body("PATCH", path, JSON, target.to_string());
        runtime.block_on(setup::send_ok(&owner, &request))?;
    }
    let (storm, b) = runtime.block_on(storm((&owner, b), &key, Restart::of(server)))?;
    drop(b);
    // A replica that starts now reads the database afresh: what A serves should be that.
    let fresh = setup::replica(runtime, binary, place, "chaos-c", &[])?;
    let reader = Target {
        token: key.clone(),
        ..setup::owner(&fresh)
    };
    let fresh_latest = runtime
        .block_on(setup::send_ok(&reader, &Request::get("/sdk/latest-all")))?
        .json()?;
    drop((a, fresh));
    Ok(report(&storm, &fresh_latest))
}

/// Counts over every client's log.
#[derive(Debug, Default)]
struct Totals {
    connections: u64,
    moved: u64,
    refusals: u64,
    connect_failures: u64,
    errors: u64,
    ended: u64,
    events: u64,
    stale: u64,
    later_puts: u64,
    put_backwards: u64,
    not_streaming: u64,
    differing: u64,
    samples: Vec<String>,
}

fn totals(storm: &Storm) -> Totals {
    let mut t = Totals::default();
    for (id, log) in storm.logs.iter().enumerate() {
        let log = lock(log);
        t.connections += log.connections;
        t.moved += log.moved;
        t.refusals += log.refusals;
        t.errors += log.errors;
        t.connect_failures += log.connect_failures;
        t.ended += log.ended;
        t.events += log.events;
        t.stale += log.stale;
        t.later_puts += log.later_puts;
        t.put_backwards += log.put_backwards;
        t.not_streaming += u64::from(!log.streaming);
        if let Some(sample) = &log.stale_sample {
            if t.samples.len() < 3 {
                t.samples
                    .push(format!("client {id}: stale event: {sample}"));
            }
        }
        let differences = log.store.differences(&storm.latest);
        if !differences.is_empty() {
            t.differing += 1;
            if t.samples.len() < 6 {
                let shown: Vec<&str> = differences.iter().take(3).map(String::as_str).collect();
                t.samples.push(format!(
                    "client {id} ({} differences{}): {}",
                    differences.len(),
                    log.last_error
                        .as_ref()
                        .map_or(String::new(), |e| format!(", last error: {e}")),
                    shown.join("; ")
                ));
            }
        }
    }
    t
}

fn report(storm: &Storm, fresh_latest: &Value) -> Outcome {
    let t = totals(storm);
    let clients = storm.logs.len();
    let served = storm.latest["flags"]
        .as_object()
        .map_or(0, serde_json::Map::len);
    let fresh_same = *fresh_latest == storm.latest;
    let measured = format!(
        "{clients} SDK clients ({CLIENTS_PER_REPLICA} per replica), {WRITERS} writers for {} s ({} writes answered 2xx; failed: {}); {}; clients: {} streams opened ({} on the other replica), {} ended by the server, {} broke, {} refused, {} connections failed; {} events, {} later `put`s: stores differing from A's `/sdk/latest-all` ({served} flags): {}; events not above the held version: {}",
        WRITING.as_secs(),
        storm.writes.succeeded,
        storm.writes.failures(),
        storm.done.join("; "),
        t.connections,
        t.moved,
        t.ended,
        t.errors,
        t.refusals,
        t.connect_failures,
        t.events,
        t.later_puts,
        t.differing,
        t.stale,
    );
    let met = t.differing == 0 && t.stale == 0;
    println!("  {measured}");
    for sample in &t.samples {
        println!("    {sample}");
    }
    let mut outcome = Outcome {
        rows: vec![StreamRow {
            case: "stream-chaos".into(),
            store: "PostgreSQL",
            measured,
            goal: format!(
                "0 stores differing, 0 versions going back: {}",
                if met { "met" } else { "missed" }
            ),
        }],
        notes: vec![format!(
            "stream-chaos: {} items taken back by a `put` within a connection; {} clients without an open stream at the end; a replica started afterwards on the same database serves {} A's `/sdk/latest-all`{}.",
            t.put_backwards,
            t.not_streaming,
            if fresh_same { "the same as" } else { "something other than" },
            if t.samples.is_empty() {
                String::new()
            } else {
                format!("; samples: {}", t.samples.join(" | "))
            }
        )],
        broken: vec![],
    };
    if !met || !fresh_same {
        outcome.broken.push(format!(
            "stream-chaos: {} stores differ, {} events went back, fresh replica {}",
            t.differing,
            t.stale,
            if fresh_same { "agrees" } else { "disagrees" }
        ));
    }
    outcome
}
