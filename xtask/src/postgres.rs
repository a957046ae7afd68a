//! A PostgreSQL server for the tests: `DATABASE_URL`, else one on 127.0.0.1:5432, else a
//! throwaway cluster started with `initdb`/`pg_ctl` (as the `postgres` user when run as root).
//! The bench starts its throwaway cluster with other settings ([`ClusterSettings`]).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// A server the tests may create databases on; a cluster started here is stopped on drop.
#[derive(Debug)]
pub enum Server {
    Existing {
        url: String,
        source: &'static str,
    },
    Throwaway {
        url: String,
        data_dir: PathBuf,
        pg_ctl: PathBuf,
        as_postgres: bool,
    },
}

impl Server {
    pub fn url(&self) -> &str {
        match self {
            Server::Existing { url, .. } | Server::Throwaway { url, .. } => url,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Server::Existing { url, source } => format!("{url} ({source})"),
            Server::Throwaway { url, .. } => {
                format!("{url} (a throwaway cluster started for this run)")
            }
        }
    }

    /// The data directory of a cluster started here (where `postmaster.pid` is).
    pub fn data_dir(&self) -> Option<&Path> {
        match self {
            Server::Existing { .. } => None,
            Server::Throwaway { data_dir, .. } => Some(data_dir),
        }
    }
}

/// How a throwaway cluster is configured beyond PostgreSQL's defaults.
#[derive(Debug, Clone, Copy)]
pub struct ClusterSettings {
    /// Tests turn fsync off (nothing there needs to survive a crash); the bench keeps it on, as
    /// a production server has it, so that writes cost what they cost.
    pub fsync: bool,
    /// `max_connections`, when the default (100) may be too few.
    pub max_connections: Option<u32>,
}

impl ClusterSettings {
    pub const FOR_TESTS: ClusterSettings = ClusterSettings {
        fsync: false,
        max_connections: None,
    };
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Server::Throwaway {
            data_dir,
            pg_ctl,
            as_postgres,
            ..
        } = self
        {
            let dir = data_dir.display().to_string();
            let _ = as_user(
                *as_postgres,
                pg_ctl,
                &["-D", &dir, "-m", "fast", "-w", "stop"],
            )
            .status();
            let _ = std::fs::remove_dir_all(data_dir.parent().unwrap_or(data_dir));
        }
    }
}

fn as_user(as_postgres: bool, program: &Path, args: &[&str]) -> Command {
    if as_postgres {
        let mut command = Command::new("runuser");
        command
            .args(["-u", "postgres", "--"])
            .arg(program)
            .args(args);
        command
    } else {
        let mut command = Command::new(program);
        command.args(args);
        command
    }
}

fn reachable(addr: &str) -> bool {
    addr.parse::<SocketAddr>()
        .is_ok_and(|a| TcpStream::connect_timeout(&a, Duration::from_millis(500)).is_ok())
}

pub(crate) fn find_tool(name: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let mut versioned: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| {
            dirs.filter_map(|d| d.ok())
                .map(|d| d.path().join("bin").join(name))
                .collect()
        })
        .unwrap_or_default();
    versioned.sort();
    versioned.reverse();
    on_path.into_iter().chain(versioned).find(|p| p.is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")
        .context("finding a free port")?
        .local_addr()?
        .port())
}

pub fn find_or_start() -> Result<Server> {
    // XTASK_POSTGRES=throwaway skips the existing servers (to exercise the last resort).
    let throwaway_only = std::env::var("XTASK_POSTGRES").is_ok_and(|v| v == "throwaway");
    if throwaway_only {
        let (Some(initdb), Some(pg_ctl)) = (find_tool("initdb"), find_tool("pg_ctl")) else {
            bail!("XTASK_POSTGRES=throwaway needs initdb and pg_ctl");
        };
        return start_throwaway(&initdb, &pg_ctl, ClusterSettings::FOR_TESTS);
    }
    if let Ok(url) = std::env::var("DATABASE_URL") {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Server::Existing {
                url,
                source: "DATABASE_URL",
            });
        }
    }
    if reachable("127.0.0.1:5432") {
        return Ok(Server::Existing {
            url: "postgres://postgres@127.0.0.1:5432/postgres".into(),
            source: "the server on 127.0.0.1:5432",
        });
    }
    let (Some(initdb), Some(pg_ctl)) = (find_tool("initdb"), find_tool("pg_ctl")) else {
        bail!(
            "the PostgreSQL tests need a server, and none was found: set DATABASE_URL=postgres://user@host:port/db, \
             start one on 127.0.0.1:5432 (user postgres, trust auth), or install PostgreSQL's initdb and pg_ctl \
             (e.g. apt-get install postgresql) so that a throwaway cluster can be started"
        );
    };
    start_throwaway(&initdb, &pg_ctl, ClusterSettings::FOR_TESTS)
}

/// A throwaway cluster with these settings, whatever servers exist (`initdb` and `pg_ctl` must
/// be installed).
pub fn start_throwaway_cluster(settings: ClusterSettings) -> Result<Server> {
    let (Some(initdb), Some(pg_ctl)) = (find_tool("initdb"), find_tool("pg_ctl")) else {
        bail!(
            "a throwaway PostgreSQL cluster needs initdb and pg_ctl (e.g. apt-get install postgresql); \
             or set DATABASE_URL=postgres://user@host:port/db"
        );
    };
    start_throwaway(&initdb, &pg_ctl, settings)
}

fn start_throwaway(initdb: &Path, pg_ctl: &Path, settings: ClusterSettings) -> Result<Server> {
    let as_postgres = is_root();
    let base = std::env::temp_dir().join(format!("flagsvc-pg-{}", std::process::id()));
    let data_dir = base.join("data");
    std::fs::create_dir_all(&base).context("creating the cluster directory")?;
    if as_postgres {
        // initdb and pg_ctl refuse to run as root.
        let status = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(&base)
            .status()?;
        if !status.success() {
            bail!("cannot hand {} to the postgres user", base.display());
        }
    }
    let dir = data_dir.display().to_string();
    let status = as_user(
        as_postgres,
        initdb,
        &["-D", &dir, "-U", "postgres", "--auth=trust", "--no-sync"],
    )
    .stdout(std::process::Stdio::null())
    .status()
    .context("running initdb")?;
    if !status.success() {
        bail!("initdb failed");
    }
    let port = free_port()?;
    let mut options = format!(
        "-p {port} -k {} -c listen_addresses=127.0.0.1",
        base.display()
    );
    if !settings.fsync {
        options.push_str(" -c fsync=off");
    }
    if let Some(max_connections) = settings.max_connections {
        options.push_str(&format!(" -c max_connections={max_connections}"));
    }
    let log = base.join("postgres.log").display().to_string();
    let status = as_user(
        as_postgres,
        pg_ctl,
        &["-D", &dir, "-o", &options, "-l", &log, "-w", "start"],
    )
    .status()
    .context("running pg_ctl start")?;
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let server = Server::Throwaway {
        url,
        data_dir,
        pg_ctl: pg_ctl.to_path_buf(),
        as_postgres,
    };
    if !status.success() {
        bail!("pg_ctl could not start the cluster (log: {log})");
    }
    Ok(server)
}

/// Runs one SQL command with `psql` and returns what it printed (unaligned, tuples only).
pub(crate) fn psql(url: &str, sql: &str) -> Result<String> {
    let psql = find_tool("psql").context("PostgreSQL's psql is needed to create databases")?;
    let output = Command::new(psql)
        .args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            url,
            "-c",
            sql,
        ])
        .stdin(Stdio::null())
        .output()
        .context("running psql")?;
    if !output.status.success() {
        bail!(
            "psql -c {sql:?} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// A URL naming another database on the same server.
pub(crate) fn with_database(url: &str, database: &str) -> Result<String> {
    let (prefix, rest) = url
        .rsplit_once('/')
        .context("a PostgreSQL URL ends in /<database>")?;
    let query = rest.split_once('?').map(|(_, q)| format!("?{q}"));
    Ok(format!("{prefix}/{database}{}", query.unwrap_or_default()))
}
