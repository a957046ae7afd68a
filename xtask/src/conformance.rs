//! `cargo xtask conformance`: the server's binary, optimised (profile `release-quick`: the
//! release profile without its link-time optimisation, which doubles a build from scratch and
//! changes no behaviour), on a fresh SQLite file and on a fresh
//! PostgreSQL database, tested against its own served OpenAPI document by schemathesis (every
//! check, every phase, the stateful one included). Any failure fails the task.
//!
//! Before schemathesis, on the same fresh store, the original's official Python client
//! (`launchdarkly-api` from PyPI, unmodified) calls every operation flagsvc serves as the owner,
//! an admin, a writer, a reader and a custom role, and must deserialise every answer with the
//! original's own schemas (`xtask/official_client_sweep.py`).
//!
//! First of all, OpenFeature's own SDKs read flags over OFREP with their providers, unmodified
//! (see `openfeature`), and the original's server-side SDKs, unmodified, stream and poll them
//! (see `sdks`).
//!
//! schemathesis and the client are installed from PyPI, at pinned versions, into a virtualenv
//! under `target/conformance/venv`; schemathesis's reports (JUnit XML) go to
//! `target/conformance/<store>/`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::postgres;

/// The schemathesis release the document is held to; a newer one may bring new checks, so
/// upgrading is a deliberate change.
const SCHEMATHESIS: &str = "4.32.5";
/// The original's official Python client the answers must deserialise in.
const OFFICIAL_CLIENT: &str = "launchdarkly-api==17.0.0";
const TOKEN: &str = "conformance-owner-token";
/// Test cases per operation and phase: enough to reach every declared status of every route
/// while keeping both stores within a few minutes on two cores.
const DEFAULT_MAX_EXAMPLES: &str = "40";
const DEFAULT_SEED: &str = "20240415";

struct Server {
    child: Child,
    origin: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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

/// The virtualenv's `schemathesis` and the official client, installed on first use.
fn schemathesis(dir: &Path) -> Result<PathBuf> {
    let venv = dir.join("venv");
    let program = venv.join("bin").join("schemathesis");
    let installed = Command::new(&program)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(SCHEMATHESIS))
        && Command::new(venv.join("bin").join("pip"))
            .args(["show", "--quiet", "launchdarkly-api"])
            .output()
            .is_ok_and(|o| o.status.success());
    if installed {
        return Ok(program);
    }
    println!(
        "conformance: installing schemathesis {SCHEMATHESIS} into {}",
        venv.display()
    );
    let python = ["python3", "python"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok())
        .context(
            "conformance needs Python 3 with venv and pip (e.g. apt-get install python3-venv) to install schemathesis",
        )?;
    crate::process::run(Command::new(python).args(["-m", "venv"]).arg(&venv))
        .context("creating the virtualenv (Debian: apt-get install python3-venv)")?;
    crate::process::run(
        Command::new(venv.join("bin").join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .arg(format!("schemathesis=={SCHEMATHESIS}"))
            .arg(OFFICIAL_CLIENT),
    )
    .context("installing schemathesis and the official client from PyPI")?;
    Ok(program)
}

fn start(binary: &Path, database_url: &str, log: &Path) -> Result<Server> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let log_file = std::fs::File::create(log).with_context(|| format!("creating {log:?}"))?;
    let child = Command::new(binary)
        .args(["--bind", &format!("127.0.0.1:{port}")])
        .args(["--database-url", database_url])
        .args(["--bootstrap-token", TOKEN])
        // The tester sends thousands of requests, many with a wrong token on purpose: limits
        // would turn its answers into 429s, which say nothing about the contract.
        .args([
            "--rate-limit",
            "0",
            "--auth-failure-limit",
            "0",
            "--log",
            "warn",
        ])
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let server = Server {
        child,
        origin: format!("http://127.0.0.1:{port}"),
    };
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(server);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!(
        "flagsvc did not start on port {port} (log: {})",
        log.display()
    )
}

/// Runs the official client's sweep, then schemathesis, against one server on a fresh store;
/// true when neither found anything.
fn check(
    program: &Path,
    clients: &crate::clients::Installed,
    sdks: &crate::clients::Installed,
    server: &Server,
    report_dir: &Path,
) -> Result<bool> {
    // First, on a store nothing else wrote: applications reading flags over OFREP, and with
    // the original's SDKs.
    let read = crate::clients::check(clients, &server.origin, TOKEN)?;
    let streamed = crate::clients::check(sdks, &server.origin, TOKEN)?;
    let python = program.with_file_name("python");
    let sweep = workspace_root()
        .join("xtask")
        .join("official_client_sweep.py");
    let swept = Command::new(python)
        .arg(sweep)
        .args([&server.origin, TOKEN])
        .status()
        .context("running the official client's sweep")?
        .success();
    Ok(schemathesis_run(program, server, report_dir)? && swept && read && streamed)
}

/// Runs schemathesis against one server; true when it found nothing.
fn schemathesis_run(program: &Path, server: &Server, report_dir: &Path) -> Result<bool> {
    let max_examples = std::env::var("CONFORMANCE_MAX_EXAMPLES")
        .unwrap_or_else(|_| DEFAULT_MAX_EXAMPLES.to_owned());
    let seed = std::env::var("CONFORMANCE_SEED").unwrap_or_else(|_| DEFAULT_SEED.to_owned());
    let config = workspace_root().join("xtask").join("schemathesis.toml");
    let status = Command::new(program)
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(format!("{}/api/v2/openapi.json", server.origin))
        .args(["--header", &format!("Authorization: {TOKEN}")])
        .args(["--checks", "all"])
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args(["--max-examples", &max_examples, "--seed", &seed])
        // One worker: two threads of schemathesis can trip CPython 3.11 (a recursion-depth
        // mismatch in its AST while inspecting sources), and one keeps a seeded run repeatable.
        .args(["--workers", "1", "--request-timeout", "30"])
        .args(["--generation-database", "none"])
        .args(["--report", "junit", "--report-dir"])
        .arg(report_dir)
        .env("NO_COLOR", "1")
        .status()
        .context("running schemathesis")?;
    Ok(status.success())
}

pub fn conformance(cargo: &mut Command) -> Result<()> {
    let dir = target_dir().join("conformance");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let program = schemathesis(&dir)?;
    let clients = crate::clients::install(&dir, &crate::openfeature::OPENFEATURE)?;
    let sdks = crate::clients::install(&dir, &crate::sdks::SDKS)?;
    crate::process::run(cargo.args([
        "build",
        "--profile",
        "release-quick",
        "--quiet",
        "-p",
        "flagsvc",
    ]))?;
    let binary = target_dir().join("release-quick").join("flagsvc");
    let mut failed = vec![];

    let file = dir.join(format!("flagsvc-{}.db", std::process::id()));
    {
        let server = start(
            &binary,
            &file.display().to_string(),
            &dir.join("sqlite.log"),
        )?;
        println!("conformance: SQLite ({})", server.origin);
        if !check(&program, &clients, &sdks, &server, &dir.join("sqlite"))? {
            failed.push("SQLite");
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }

    let postgres = postgres::find_or_start()?;
    let database = format!("flagsvc_conformance_{}", std::process::id());
    postgres::psql(postgres.url(), &format!("CREATE DATABASE {database}"))?;
    let outcome = (|| {
        let url = postgres::with_database(postgres.url(), &database)?;
        let server = start(&binary, &url, &dir.join("postgres.log"))?;
        println!(
            "conformance: PostgreSQL ({}, {})",
            server.origin,
            postgres.describe()
        );
        check(&program, &clients, &sdks, &server, &dir.join("postgres"))
    })();
    let dropped = postgres::psql(
        postgres.url(),
        &format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"),
    )
    .map(drop);
    if !outcome? {
        failed.push("PostgreSQL");
    }
    dropped?;

    if !failed.is_empty() {
        bail!(
            "the OpenFeature clients, the original's SDKs, the official client's sweep or schemathesis found failures on {} (reports under {})",
            failed.join(" and "),
            dir.display()
        );
    }
    println!("conformance: no failures on SQLite and PostgreSQL");
    Ok(())
}
