//! `cargo xtask bench`: the release binary under load over loopback HTTP.
//!
//! Starts `flagsvc` (rate limiting off) on SQLite, and on PostgreSQL when `DATABASE_URL` names
//! one (its database must exist), seeds a project with 5 environments and 200 flags, then runs
//! each scenario with 4 client threads and reports throughput, latency percentiles and the
//! server's peak memory.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

const TOKEN: &str = "bench-token-0123456789";
const CLIENTS: usize = 4;
const REQUESTS: usize = 2000;
const FLAGS: usize = 200;

struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn peak_memory_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

fn start(binary: &str, database_url: &str) -> Result<Server> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let child = Command::new(binary)
        .args([
            "--bind",
            &format!("127.0.0.1:{port}"),
            "--database-url",
            database_url,
            "--bootstrap-token",
            TOKEN,
        ])
        .args(["--rate-limit", "0", "--log", "warn"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting flagsvc")?;
    let server = Server {
        child,
        base: format!("http://127.0.0.1:{port}/api/v2"),
    };
    let agent = agent();
    for _ in 0..100 {
        if agent.get(&server.base).call().is_ok() {
            return Ok(server);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("flagsvc did not start on port {port}")
}

fn send(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    content_type: &str,
    body: Option<&Value>,
) -> Result<u16> {
    let status = match (method, body) {
        ("GET", _) => agent.get(url).header("Authorization", TOKEN).call(),
        ("DELETE", _) => agent.delete(url).header("Authorization", TOKEN).call(),
        (_, Some(body)) => {
            let request = if method == "PATCH" {
                agent.patch(url)
            } else {
                agent.post(url)
            };
            request
                .header("Authorization", TOKEN)
                .header("Content-Type", content_type)
                .send(body.to_string())
        }
        _ => bail!("{method} needs a body"),
    }
    .map_err(|e| anyhow::anyhow!("{method} {url}: {e}"))?
    .status()
    .as_u16();
    Ok(status)
}

fn seed(server: &Server, project: &str) -> Result<()> {
    let agent = agent();
    let environments: Vec<Value> = ["dev", "qa", "staging", "canary", "production"]
        .iter()
        .map(|k| json!({"key": k, "name": k, "color": "00AA00"}))
        .collect();
    let status = send(
        &agent,
        "POST",
        &format!("{}/projects", server.base),
        "application/json",
        Some(&json!({"key": project, "name": project, "environments": environments})),
    )?;
    if status != 201 {
        bail!("seeding the project answered {status}");
    }
    for i in 0..FLAGS {
        let body =
            json!({"key": format!("flag-{i}"), "name": format!("Flag {i}"), "tags": ["bench"]});
        let status = send(
            &agent,
            "POST",
            &format!("{}/flags/{project}", server.base),
            "application/json",
            Some(&body),
        )?;
        if status != 201 {
            bail!("seeding flag {i} answered {status}");
        }
    }
    Ok(())
}

/// One request of a scenario: its index in, the status out.
type Scenario = Arc<dyn Fn(&ureq::Agent, usize) -> Result<u16> + Send + Sync>;

struct Outcome {
    name: &'static str,
    per_second: f64,
    p50: Duration,
    p95: Duration,
    p99: Duration,
    errors: usize,
}

fn run(name: &'static str, scenario: Scenario) -> Outcome {
    let started = Instant::now();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let scenario = scenario.clone();
            std::thread::spawn(move || {
                let agent = agent();
                let mut latencies = Vec::with_capacity(REQUESTS / CLIENTS);
                let mut errors = 0;
                for i in (client..REQUESTS).step_by(CLIENTS) {
                    let at = Instant::now();
                    match scenario(&agent, i) {
                        Ok(status) if status < 400 => latencies.push(at.elapsed()),
                        _ => errors += 1,
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut errors = 0;
    for thread in threads {
        if let Ok((l, e)) = thread.join() {
            latencies.extend(l);
            errors += e;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64) * q) as usize)
            .copied()
            .unwrap_or_default()
    };
    Outcome {
        name,
        per_second: REQUESTS as f64 / elapsed,
        p50: at(0.5),
        p95: at(0.95),
        p99: at(0.99),
        errors,
    }
}

fn scenarios(server: &Server, project: &str) -> Vec<Outcome> {
    let base = Arc::new(server.base.clone());
    let project = Arc::new(project.to_owned());
    let mut outcomes = Vec::new();
    let (b, p) = (base.clone(), project.clone());
    outcomes.push(run(
        "GET one flag",
        Arc::new(move |agent, i| {
            send(
                agent,
                "GET",
                &format!("{b}/flags/{p}/flag-{}", i % FLAGS),
                "",
                None,
            )
        }),
    ));
    let (b, p) = (base.clone(), project.clone());
    outcomes.push(run(
        "GET flag list (20, env=production, summary=0)",
        Arc::new(move |agent, i| {
            send(
                agent,
                "GET",
                &format!(
                    "{b}/flags/{p}?env=production&summary=0&offset={}",
                    (i * 20) % FLAGS
                ),
                "",
                None,
            )
        }),
    ));
    let (b, p) = (base.clone(), project.clone());
    outcomes.push(run(
        "PATCH flag (semantic: turn on/off)",
        Arc::new(move |agent, i| {
            let kind = if (i / FLAGS).is_multiple_of(2) {
                "turnFlagOn"
            } else {
                "turnFlagOff"
            };
            let body = json!({"environmentKey": "production", "instructions": [{"kind": kind}]});
            send(
                agent,
                "PATCH",
                &format!("{b}/flags/{p}/flag-{}", i % FLAGS),
                "application/json; domain-model=svc.semanticpatch",
                Some(&body),
            )
        }),
    ));
    let (b, p) = (base, project);
    outcomes.push(run(
        "PATCH flag (JSON Patch: add a target)",
        Arc::new(move |agent, i| {
            let body = json!([{"op": "add", "path": "/environments/qa/targets/-", "value": {"values": [format!("user-{i}")], "variation": 0}}]);
            send(agent, "PATCH", &format!("{b}/flags/{p}/flag-{}", i % FLAGS), "application/json", Some(&body))
        }),
    ));
    outcomes
}

fn report(store: &str, server: &Server, outcomes: &[Outcome]) {
    println!("\n{store}: {REQUESTS} requests per scenario, {CLIENTS} clients, {FLAGS} flags in 5 environments");
    println!("| scenario | req/s | p50 | p95 | p99 | errors |");
    println!("|---|---|---|---|---|---|");
    for o in outcomes {
        println!(
            "| {} | {:.0} | {:.1} ms | {:.1} ms | {:.1} ms | {} |",
            o.name,
            o.per_second,
            o.p50.as_secs_f64() * 1000.0,
            o.p95.as_secs_f64() * 1000.0,
            o.p99.as_secs_f64() * 1000.0,
            o.errors
        );
    }
    if let Some(kib) = server.peak_memory_kib() {
        println!("server peak memory (VmHWM): {:.1} MiB", kib as f64 / 1024.0);
    }
}

pub fn bench(cargo: &mut Command) -> Result<()> {
    crate::run(cargo.args(["build", "--release", "--quiet", "-p", "flagsvc"]))?;
    let binary = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/flagsvc");
    let binary = binary.to_str().context("binary path")?.to_owned();
    let project = format!("bench{}", std::process::id());

    let file = std::env::temp_dir().join(format!("flagsvc-bench-{}.db", std::process::id()));
    let sqlite = start(&binary, &file.display().to_string())?;
    seed(&sqlite, &project)?;
    let outcomes = scenarios(&sqlite, &project);
    report("SQLite", &sqlite, &outcomes);
    drop(sqlite);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }

    match std::env::var("DATABASE_URL") {
        Ok(url) if url.starts_with("postgres") => {
            let postgres = start(&binary, &url)?;
            seed(&postgres, &project)?;
            let outcomes = scenarios(&postgres, &project);
            report("PostgreSQL", &postgres, &outcomes);
            let _ = send(
                &agent(),
                "DELETE",
                &format!("{}/projects/{project}", postgres.base),
                "",
                None,
            );
        }
        _ => println!(
            "\n(PostgreSQL: set DATABASE_URL=postgres://.../<existing database> to measure it too)"
        ),
    }
    Ok(())
}
