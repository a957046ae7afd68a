//! `cargo xtask bench`: the release binary under load, beside pgbench on the same PostgreSQL,
//! with the CPU each request costs. See docs/benchmarks.md for the method.
//!
//! Order of a run: pgbench -S and -N; the PostgreSQL cases; pgbench again; the SQLite cases;
//! pgbench again. Each store's reference is the mean of the pgbench runs on either side of its
//! cases, so that a drift of the machine (another job, thermal limits) shows in both figures.

mod cases;
mod http;
mod load;
mod pgbench;
mod procfs;
mod report;
mod server;
mod snapshots;
mod store;
mod streams;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::postgres::{self, ClusterSettings};
use cases::{Settings, StoreCases, CASES};
use load::Target;
use pgbench::{Mode, Pgbench};
use report::{ReferenceRun, RunDescription, StoreReport};
use server::Flagsvc;
use store::{remove_sqlite, Store};

const USAGE: &str = "usage: cargo xtask bench [--binary PATH] [--duration SECS] [--warmup SECS] \
[--connections N] [--store postgres|sqlite|both] [--cases ID,ID,...] [--output FILE|-]";

#[derive(Debug)]
struct Options {
    binary: Option<PathBuf>,
    duration: Duration,
    warmup: Duration,
    connections: usize,
    stores: Vec<Store>,
    cases: Option<BTreeSet<String>>,
    /// `None`: print only.
    output: Option<PathBuf>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options> {
        let mut options = Options {
            binary: None,
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(2),
            connections: 32,
            stores: vec![Store::Postgres, Store::Sqlite],
            cases: None,
            output: Some(workspace_root().join("docs/benchmarks.md")),
        };
        let mut args = args.iter();
        while let Some(name) = args.next() {
            let mut value = || {
                args.next()
                    .with_context(|| format!("{name} needs a value\n{USAGE}"))
            };
            let seconds = |text: &str| -> Result<Duration> {
                let seconds: u64 = text
                    .parse()
                    .with_context(|| format!("{name} takes whole seconds, not {text:?}"))?;
                Ok(Duration::from_secs(seconds))
            };
            match name.as_str() {
                "--binary" => options.binary = Some(PathBuf::from(value()?)),
                "--duration" => options.duration = seconds(value()?)?,
                "--warmup" => options.warmup = seconds(value()?)?,
                "--connections" => {
                    let text = value()?;
                    options.connections =
                        text.parse().ok().filter(|&n| n > 0).with_context(|| {
                            format!("--connections takes a positive number, not {text:?}")
                        })?;
                }
                "--store" => {
                    options.stores = match value()?.as_str() {
                        "postgres" => vec![Store::Postgres],
                        "sqlite" => vec![Store::Sqlite],
                        "both" => vec![Store::Postgres, Store::Sqlite],
                        other => bail!("--store takes postgres, sqlite or both, not {other:?}"),
                    }
                }
                "--cases" => {
                    let cases: BTreeSet<String> =
                        value()?.split(',').map(|c| c.trim().to_owned()).collect();
                    if let Some(unknown) = cases.iter().find(|c| !CASES.contains(&c.as_str())) {
                        bail!(
                            "unknown case {unknown:?}; the cases are {}",
                            CASES.join(", ")
                        );
                    }
                    options.cases = Some(cases);
                }
                "--output" => {
                    let path = value()?;
                    options.output = (path != "-").then(|| PathBuf::from(path));
                }
                "-h" | "--help" => {
                    println!("{USAGE}\ncases: {}", CASES.join(", "));
                    std::process::exit(0);
                }
                other => bail!("unknown option {other:?}\n{USAGE}"),
            }
        }
        if options.duration.is_zero() {
            bail!("--duration must be at least 1 second");
        }
        Ok(options)
    }
}

/// The server's settings taken from the environment (it inherits `FLAGSVC_*` variables, e.g.
/// `FLAGSVC_READ_CACHE_MIB=0` to measure without the read cache), as the report states them.
fn server_environment() -> String {
    let mut set: Vec<String> = std::env::vars()
        .filter(|(name, _)| name.starts_with("FLAGSVC_") && name != "FLAGSVC_TEST_POSTGRES_URL")
        .map(|(name, value)| format!("`{name}={value}`"))
        .collect();
    set.sort();
    if set.is_empty() {
        " and its default read cache".to_owned()
    } else {
        format!(" and {}", set.join(", "))
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// What a command prints, trimmed; `unknown` if it cannot run.
fn command_output(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .current_dir(workspace_root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".into())
}

/// The PostgreSQL cluster of the run and the databases the bench made on it (dropped on drop).
#[derive(Debug)]
struct Postgres {
    server: postgres::Server,
    postmaster_pid: Option<u32>,
    databases: Vec<String>,
}

impl Postgres {
    /// `DATABASE_URL` when it names a PostgreSQL server, else a throwaway cluster with fsync
    /// on. Never the server on 127.0.0.1:5432 unless `DATABASE_URL` names it: another
    /// engineer's work may be running there.
    fn find_or_start(connections: usize) -> Result<Postgres> {
        let server = match std::env::var("DATABASE_URL") {
            Ok(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                postgres::Server::Existing {
                    url,
                    source: "DATABASE_URL",
                }
            }
            _ => {
                // The server's pool (4 per core by default) and pgbench's clients at once, with
                // room for psql and PostgreSQL's own; never below the default of 100.
                let cores = std::thread::available_parallelism().map_or(2, usize::from);
                let needed = (4 * cores + connections + 10) as u32;
                postgres::start_throwaway_cluster(ClusterSettings {
                    fsync: true,
                    max_connections: Some(needed.max(100)),
                })?
            }
        };
        let postmaster_pid = match server.data_dir() {
            Some(dir) => procfs::postmaster_pid(dir).ok(),
            None => postgres::psql(server.url(), "SHOW data_directory")
                .and_then(|dir| procfs::postmaster_pid(Path::new(&dir)))
                .map_err(|e| println!("bench: PostgreSQL CPU cannot be measured: {e:#}"))
                .ok(),
        };
        Ok(Postgres {
            server,
            postmaster_pid,
            databases: vec![],
        })
    }

    /// A new, empty database of the bench; its URL.
    fn create_database(&mut self, purpose: &str) -> Result<String> {
        let name = format!("flagsvc_bench_{purpose}_{}", std::process::id());
        postgres::psql(
            self.server.url(),
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )?;
        postgres::psql(self.server.url(), &format!("CREATE DATABASE {name}"))?;
        self.databases.push(name.clone());
        postgres::with_database(self.server.url(), &name)
    }

    fn setting(&self, sql: &str) -> String {
        postgres::psql(self.server.url(), sql).unwrap_or_else(|e| format!("unknown ({e:#})"))
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        for name in &self.databases {
            if let Err(e) = postgres::psql(
                self.server.url(),
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            ) {
                eprintln!("bench: could not drop database {name}: {e:#}");
            }
        }
    }
}

/// pgbench -S and -N, one after the other.
fn reference_run(
    pgbench: &Pgbench,
    postgres: &Postgres,
    options: &Options,
    ticks_per_second: f64,
    when: &str,
) -> Result<ReferenceRun> {
    let outcome = |mode: Mode| -> Result<pgbench::Outcome> {
        let outcome = pgbench.run(
            mode,
            options.connections,
            options.duration,
            postgres.postmaster_pid,
            ticks_per_second,
        )?;
        println!(
            "pgbench {} ({when}): {:.0} TPS, PostgreSQL {} ms/tx",
            mode.flag(),
            outcome.tps,
            outcome
                .postgres_ms_per_transaction
                .map_or("n/a".into(), |v| format!("{v:.3}"))
        );
        Ok(outcome)
    };
    Ok(ReferenceRun {
        when: when.to_owned(),
        select: outcome(Mode::Select)?,
        write: outcome(Mode::Write)?,
    })
}

fn binary(options: &Options, cargo: &mut Command) -> Result<PathBuf> {
    if let Some(binary) = &options.binary {
        if !binary.is_file() {
            bail!("--binary {}: no such file", binary.display());
        }
        return Ok(binary.clone());
    }
    crate::process::run(cargo.args(["build", "--release", "--quiet", "-p", "flagsvc"]))?;
    Ok(target_dir().join("release").join("flagsvc"))
}

fn machine_description() -> String {
    let cores = command_output("nproc", &[]);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown CPU", |(_, m)| m.trim())
        .to_owned();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok())
        .map_or("unknown".into(), |kib| {
            format!("{:.1} GiB", kib / 1024.0 / 1024.0)
        });
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into());
    format!("{cores} cores ({model}), {memory_gib} of memory; load average {load} at the start (the load generator, flagsvc and PostgreSQL share these cores)")
}

fn version_description(
    binary: &Path,
    postgres: Option<&Postgres>,
    pgbench: Option<&Pgbench>,
) -> String {
    let commit = command_output("git", &["rev-parse", "--short", "HEAD"]);
    let dirty = if command_output("git", &["status", "--porcelain"]).is_empty() {
        "clean"
    } else {
        "dirty"
    };
    let server_version = command_output(binary, &["--version"]);
    let rustc = command_output("rustc", &["--version"]);
    // The binary as the workspace names it, not by this machine's absolute path.
    let shown = binary.strip_prefix(workspace_root()).map_or_else(
        |_| binary.display().to_string(),
        |p| p.display().to_string(),
    );
    let shown = shown.trim_start_matches("xtask/../");
    let mut text = format!(
        "worktree at `{commit}` ({dirty}); server binary `{shown}` ({server_version}); {rustc}"
    );
    if let Some(postgres) = postgres {
        text.push_str(&format!("; {}", postgres.setting("SELECT version()")));
    }
    if let Some(pgbench) = pgbench {
        text.push_str(&format!(
            "; {} (`{}`)",
            pgbench.version(),
            pgbench.program().display()
        ));
    }
    text
}

/// Runs one store's cases on a fresh database and a fresh server.
fn run_store(
    store: Store,
    runtime: &tokio::runtime::Runtime,
    binary: &Path,
    postgres: Option<&mut Postgres>,
    settings: &Settings,
    work_dir: &Path,
) -> Result<(StoreReport, Vec<String>)> {
    println!("\n{}:", store.name());
    let (database_url, postmaster_pid, sqlite_file) = match store {
        Store::Postgres => {
            let postgres = postgres.context("PostgreSQL is needed for its store")?;
            (
                postgres.create_database("server")?,
                postgres.postmaster_pid,
                None,
            )
        }
        Store::Sqlite => {
            let file = work_dir.join(format!("flagsvc-bench-{}.db", std::process::id()));
            remove_sqlite(&file);
            (file.display().to_string(), None, Some(file))
        }
    };
    let log = work_dir.join(format!("{}.log", store.name().to_lowercase()));
    let server = Flagsvc::start(runtime, binary, &database_url, &log)?;
    println!(
        "  flagsvc answered {:.0} ms after spawn (log: {})",
        server.start_up.as_secs_f64() * 1000.0,
        log.display()
    );
    let mut cases = StoreCases {
        runtime,
        target: Target {
            address: server.address,
            token: server::TOKEN.to_owned(),
            server_pid: server.pid(),
            postmaster_pid,
        },
        settings,
        store,
        postgres_url: (store == Store::Postgres).then(|| database_url.clone()),
        rows: vec![],
        notes: vec![],
        broken: vec![],
    };
    let outcome = cases.run_all();
    let peak_rss_kib = procfs::peak_rss_kib(server.pid());
    let start_up = server.start_up;
    drop(server);
    if let Some(file) = sqlite_file {
        remove_sqlite(&file);
    }
    outcome.with_context(|| format!("{} cases (server log: {})", store.name(), log.display()))?;
    Ok((
        StoreReport {
            store,
            rows: cases.rows,
            peak_rss_kib,
            start_up,
            reference_select: None,
            reference_write: None,
            notes: cases.notes,
        },
        cases.broken,
    ))
}

/// What in-process benchmark `bench` of `domain` (`crates/domain/benches/<bench>.rs`, built
/// optimised) prints on its lines that start with `prefix`.
fn domain_bench(cargo: &std::ffi::OsStr, bench: &str, prefix: &str) -> Result<Vec<String>> {
    let output = Command::new(cargo)
        .args(["bench", "--quiet", "-p", "flagsvc-domain", "--bench", bench])
        .current_dir(workspace_root())
        .output()
        .with_context(|| format!("running the {bench} benchmark"))?;
    if !output.status.success() {
        bail!(
            "the {bench} benchmark failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let lines: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.starts_with(prefix))
        .map(str::to_owned)
        .collect();
    if lines.is_empty() {
        bail!("the {bench} benchmark printed no figures");
    }
    Ok(lines)
}

/// The time of one policy decision for a caller with 50 roles of 20 statements
/// (`crates/domain/benches/decide.rs`), as the benchmark prints it.
fn policy_evaluation(cargo: &std::ffi::OsStr) -> Result<String> {
    let lines = domain_bench(cargo, "decide", "decide: ")?;
    let figures: Vec<&str> = lines
        .iter()
        .filter_map(|line| line.strip_prefix("decide: "))
        .collect();
    Ok(figures.join("; "))
}

/// The evaluator beside the original's (`crates/domain/benches/evaluate.rs`), with the goal.
fn flag_evaluation(cargo: &std::ffi::OsStr) -> Result<String> {
    let lines = domain_bench(cargo, "evaluate", "evaluate")?;
    let ratio = lines
        .first()
        .and_then(|line| line.rsplit("ratio ").next())
        .and_then(|ratio| ratio.trim().parse::<f64>().ok())
        .context("the evaluation benchmark printed no ratio")?;
    Ok(format!(
        "{} (goal ≥ 1.5× the original's: {})",
        lines.join("; "),
        if ratio >= 1.5 { "met" } else { "missed" }
    ))
}

/// PostgreSQL (which serves the pgbench reference even when only SQLite is measured) and the
/// pgbench database, when there is a server.
fn reference_database(options: &Options) -> Result<(Option<Postgres>, Option<Pgbench>)> {
    let mut postgres = match Postgres::find_or_start(options.connections) {
        Ok(postgres) => Some(postgres),
        Err(e) if !options.stores.contains(&Store::Postgres) => {
            println!("bench: no PostgreSQL, so no pgbench reference: {e:#}");
            None
        }
        Err(e) => return Err(e),
    };
    let pgbench = match postgres.as_mut() {
        Some(postgres) => {
            println!("bench: PostgreSQL {}", postgres.server.describe());
            let url = postgres.create_database("pgbench")?;
            println!("bench: pgbench -i -s 10");
            Some(Pgbench::initialize(&url)?)
        }
        None => None,
    };

    Ok((postgres, pgbench))
}

/// Why the run's figures cannot be published: cases with more than 1 % of answers not 2xx,
/// and cases that broke.
fn invalid_results(reports: &[StoreReport], broken: Vec<String>) -> Vec<String> {
    reports
        .iter()
        .flat_map(|report| {
            report
                .rows
                .iter()
                .filter(|row| row.failure_share > 0.01)
                .map(move |row| {
                    format!(
                        "{} {}: {:.1} % of responses not 2xx",
                        report.store.name(),
                        row.case,
                        row.failure_share * 100.0
                    )
                })
        })
        .chain(broken)
        .collect()
}

/// Replaces the generated region of `output` (docs/benchmarks.md) with `region`.
fn write_region(output: &std::path::Path, region: &str) -> Result<()> {
    let text =
        std::fs::read_to_string(output).with_context(|| format!("reading {}", output.display()))?;
    let Some(updated) = report::replace_region(&text, region) else {
        bail!(
            "{} has no {} ... {} region to replace",
            output.display(),
            report::BEGIN_MARKER,
            report::END_MARKER
        );
    };
    std::fs::write(output, updated).with_context(|| format!("writing {}", output.display()))?;
    println!("bench: wrote {}", output.display());
    Ok(())
}

/// What the run was: when, on what, with which versions and settings.
fn run_description(
    options: &Options,
    (binary, postgres, pgbench): (&std::path::Path, Option<&Postgres>, Option<&Pgbench>),
    (elapsed, machine, policy): (std::time::Duration, &str, &str),
    references: Vec<ReferenceRun>,
) -> RunDescription {
    let date = command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let fsync = postgres.map_or("no PostgreSQL".into(), |p| {
        format!("fsync {}", p.setting("SHOW fsync"))
    });
    RunDescription {
        lines: vec![
            format!("Date: {date}; the whole run took {:.1} min.", elapsed.as_secs_f64() / 60.0),
            format!("Machine: {machine}."),
            format!("Versions: {}.", version_description(binary, postgres, pgbench)),
            format!(
                "Settings: {} connections, {} s measured after {} s of warm-up per case; flagsvc with `--rate-limit 0 --log warn`, its default pool{}; PostgreSQL {} ({fsync}, max_connections {}).",
                options.connections,
                options.duration.as_secs(),
                options.warmup.as_secs(),
                server_environment(),
                postgres.map_or("not used".into(), |p| p.server.describe()),
                postgres.map_or("-".into(), |p| p.setting("SHOW max_connections")),
            ),
            format!(
                "pgbench: scale 10, `-c {} -j 2 -T {}`, on a database of its own in the same cluster.",
                options.connections,
                options.duration.as_secs()
            ),
            format!("Policy evaluation (`cargo bench -p flagsvc-domain --bench decide`, in process): {policy}."),
        ],
        references,
        streams: vec![],
        stream_notes: vec![],
    }
}

/// Issue 34's lines: the evaluator beside the original's, and the memory of 100 × 1,000
/// flags in snapshots (when selected).
fn in_process_lines(
    runtime: &tokio::runtime::Runtime,
    (binary, work_dir): (&Path, &Path),
    settings: &Settings,
    cargo: &Command,
) -> Result<Vec<String>> {
    let mut lines = vec![];
    if settings.selected("snapshots-100x1000") {
        lines.push(format!(
            "{}.",
            snapshots::measure(runtime, binary, work_dir)?
        ));
    }
    let evaluation = flag_evaluation(cargo.get_program())?;
    lines.push(format!(
        "Flag evaluation (`cargo bench -p flagsvc-domain --bench evaluate`, one core, in process, evaluations per second beside the original's own Rust evaluator on the same flags and contexts): {evaluation}."
    ));
    Ok(lines)
}

/// Issue 35's stream cases (when selected), on servers of their own: two fresh databases on
/// the cluster for the PostgreSQL ones.
fn stream_cases(
    runtime: &tokio::runtime::Runtime,
    (binary, work_dir): (&Path, &Path),
    mut postgres: Option<&mut Postgres>,
    settings: &Settings,
) -> Result<streams::Outcome> {
    if !streams::Run::any_selected(settings) {
        return Ok(streams::Outcome::default());
    }
    let needs_postgres =
        settings.selected("stream-propagation") || settings.selected("stream-chaos");
    let databases = match postgres.as_deref_mut() {
        Some(postgres) if needs_postgres => Some([
            postgres.create_database("stream")?,
            postgres.create_database("chaos")?,
        ]),
        _ => None,
    };
    let outcome = streams::run(&streams::Run {
        runtime,
        binary,
        work_dir,
        settings,
        postgres: postgres.as_deref().map(|p| &p.server).zip(databases),
    })?;
    // `stream-chaos` restarts the cluster: its postmaster has another pid now.
    if let Some(postgres) = postgres {
        if let Some(dir) = postgres.server.data_dir() {
            postgres.postmaster_pid = procfs::postmaster_pid(dir).ok();
        }
    }
    Ok(outcome)
}

pub fn bench(args: &[String], cargo: &mut Command) -> Result<()> {
    let options = Options::parse(args)?;
    let started = Instant::now();
    let binary = binary(&options, cargo)?;
    let ticks_per_second = procfs::clock_ticks_per_second()?;
    let work_dir = target_dir().join("bench");
    std::fs::create_dir_all(&work_dir)
        .with_context(|| format!("creating {}", work_dir.display()))?;
    let machine = machine_description();

    let (mut postgres, pgbench) = reference_database(&options)?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let settings = Settings {
        connections: options.connections,
        warmup: options.warmup,
        duration: options.duration,
        cases: options.cases.clone(),
        ticks_per_second,
    };

    let mut references = vec![];
    let mut reports = vec![];
    let mut broken = vec![];
    let measure_reference =
        |when: &str, postgres: Option<&Postgres>| -> Result<Option<ReferenceRun>> {
            match (&pgbench, postgres) {
                (Some(pgbench), Some(postgres)) => Ok(Some(reference_run(
                    pgbench,
                    postgres,
                    &options,
                    ticks_per_second,
                    when,
                )?)),
                _ => Ok(None),
            }
        };
    references.extend(measure_reference("before the cases", postgres.as_ref())?);
    for (index, &store) in options.stores.iter().enumerate() {
        let (mut report, store_broken) = run_store(
            store,
            &runtime,
            &binary,
            postgres.as_mut(),
            &settings,
            &work_dir,
        )?;
        let when = if index + 1 == options.stores.len() {
            format!("after {}", store.name())
        } else {
            format!(
                "after {}, before {}",
                store.name(),
                options.stores[index + 1].name()
            )
        };
        references.extend(measure_reference(&when, postgres.as_ref())?);
        if let [.., before, after] = references.as_slice() {
            report.reference_select = Some((before.select.tps + after.select.tps) / 2.0);
            report.reference_write = Some((before.write.tps + after.write.tps) / 2.0);
        }
        reports.push(report);
        broken.extend(store_broken);
    }

    let streamed = stream_cases(&runtime, (&binary, &work_dir), postgres.as_mut(), &settings)?;
    broken.extend(streamed.broken);

    let in_process = in_process_lines(&runtime, (&binary, &work_dir), &settings, cargo)?;
    let policy = policy_evaluation(cargo.get_program())?;
    let elapsed = started.elapsed();
    let mut description = run_description(
        &options,
        (&binary, postgres.as_ref(), pgbench.as_ref()),
        (elapsed, &machine, &policy),
        references,
    );
    description.lines.extend(in_process);
    description.streams = streamed.rows;
    description.stream_notes = streamed.notes;
    let region = report::render(&description, &reports);
    println!("\n{region}");

    let failing = invalid_results(&reports, broken);
    if !failing.is_empty() {
        bail!(
            "the run is not valid, so {} was not written: {}",
            options
                .output
                .as_ref()
                .map_or("nothing".into(), |p| p.display().to_string()),
            failing.join("; ")
        );
    }
    if let Some(output) = &options.output {
        write_region(output, &region)?;
    }
    println!("bench: done in {:.1} min", elapsed.as_secs_f64() / 60.0);
    Ok(())
}
