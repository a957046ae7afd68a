//! pgbench on the same PostgreSQL cluster, as the reference a flagsvc figure is compared with:
//! what this machine does with PostgreSQL alone, measured in the same run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::procfs;

/// pgbench's scale: 1,000,000 accounts, small enough to stay in shared buffers.
const SCALE: &str = "10";
/// pgbench's own threads (`-j`): one per core of the development machine.
const THREADS: &str = "2";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `-S`: one primary-key SELECT per transaction (reference for reads).
    Select,
    /// `-N`: an UPDATE, a SELECT and an INSERT per transaction (reference for writes).
    Write,
}

impl Mode {
    pub fn flag(self) -> &'static str {
        match self {
            Mode::Select => "-S",
            Mode::Write => "-N",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub tps: f64,
    /// PostgreSQL's CPU per transaction over pgbench's run, in ms.
    pub postgres_ms_per_transaction: Option<f64>,
}

#[derive(Debug)]
pub struct Pgbench {
    program: PathBuf,
    url: String,
}

impl Pgbench {
    /// Fills the database at `url` (which must exist and be empty) with pgbench's tables.
    pub fn initialize(url: &str) -> Result<Pgbench> {
        let program = crate::postgres::find_tool("pgbench")
            .context("the bench needs pgbench (installed with PostgreSQL) for its reference")?;
        let output = Command::new(&program)
            .args(["-i", "-s", SCALE, "-q", url])
            .stdin(Stdio::null())
            .output()
            .context("running pgbench -i")?;
        if !output.status.success() {
            bail!(
                "pgbench -i failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(Pgbench {
            program,
            url: url.to_owned(),
        })
    }

    pub fn version(&self) -> String {
        Command::new(&self.program)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_else(|e| format!("unknown ({e})"))
    }

    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Runs `pgbench -S` or `-N` with `connections` clients for `duration`.
    pub fn run(
        &self,
        mode: Mode,
        connections: usize,
        duration: Duration,
        postmaster_pid: Option<u32>,
        ticks_per_second: f64,
    ) -> Result<Outcome> {
        let postgres_before = postmaster_pid.and_then(procfs::postgres_ticks);
        let output = Command::new(&self.program)
            .arg(mode.flag())
            .args(["-c", &connections.to_string(), "-j", THREADS])
            .args(["-T", &duration.as_secs().max(1).to_string()])
            .arg(&self.url)
            .stdin(Stdio::null())
            .output()
            .context("running pgbench")?;
        let postgres_after = postmaster_pid.and_then(procfs::postgres_ticks);
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            bail!(
                "pgbench {} failed: {}{}",
                mode.flag(),
                stdout.trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        let tps = parse_tps(&stdout).with_context(|| {
            format!("no `tps = ... (without initial connection time)` in {stdout}")
        })?;
        if mode == Mode::Write {
            // `-N` leaves many thousands of dead rows in its tables: cleaned up now, not by
            // autovacuum while flagsvc's cases run on the same cores and disk. (Seen: a vacuum
            // of `pgbench_accounts` running for some 8 s amid the cases; in another run, one
            // case ten times slower than in the runs before and after, PostgreSQL's processes
            // busy as never else.)
            crate::postgres::psql(&self.url, "VACUUM ANALYZE")
                .context("vacuuming pgbench's tables after its run")?;
        }
        let transactions = parse_transactions(&stdout);
        let postgres_ms_per_transaction = match (postgres_before, postgres_after, transactions) {
            (Some(before), Some(after), Some(transactions)) if transactions > 0 => Some(
                after.saturating_sub(before) as f64 / ticks_per_second * 1000.0
                    / transactions as f64,
            ),
            _ => None,
        };
        Ok(Outcome {
            tps,
            postgres_ms_per_transaction,
        })
    }
}

/// `tps = 20512.345678 (without initial connection time)`
fn parse_tps(output: &str) -> Option<f64> {
    output
        .lines()
        .find(|line| line.contains("without initial connection time"))?
        .trim()
        .strip_prefix("tps = ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `number of transactions actually processed: 205123` (pgbench 14+ may add `/205123`).
fn parse_transactions(output: &str) -> Option<u64> {
    output
        .lines()
        .find_map(|line| line.strip_prefix("number of transactions actually processed:"))?
        .trim()
        .split('/')
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 10
query mode: simple
number of clients: 32
number of threads: 2
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 205123
number of failed transactions: 0 (0.000%)
latency average = 1.560 ms
initial connection time = 21.507 ms
tps = 20512.345678 (without initial connection time)
";

    #[test]
    fn reads_tps_and_transactions() {
        assert_eq!(parse_tps(OUTPUT), Some(20512.345678));
        assert_eq!(parse_transactions(OUTPUT), Some(205123));
    }
}
