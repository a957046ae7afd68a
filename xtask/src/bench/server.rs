//! The flagsvc process under test: started with rate limiting off, its log in a file, stopped on
//! drop.

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::http::{Connection, Request};

/// The owner's token of every server the bench starts.
pub const TOKEN: &str = "bench-owner-token-0123456789";
/// How often start-up polls `GET /api/v2` (start-up time is known to this precision).
const START_POLL: Duration = Duration::from_millis(5);
/// Longest wait for a server to answer (PostgreSQL migrations on a slow disk included).
const START_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub struct Flagsvc {
    child: Child,
    pub address: SocketAddr,
    /// From spawning the process to its first answered `GET /api/v2`.
    pub start_up: Duration,
    pub log: PathBuf,
}

impl Drop for Flagsvc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Flagsvc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGKILL to the process (it is reaped on drop): a replica that dies at once.
    pub fn kill(&mut self) -> Result<()> {
        self.child.kill().context("killing flagsvc")
    }

    /// Starts the binary on `database_url` and waits until it answers.
    pub fn start(
        runtime: &tokio::runtime::Runtime,
        binary: &Path,
        database_url: &str,
        log: &Path,
    ) -> Result<Flagsvc> {
        Flagsvc::start_with(runtime, binary, (database_url, log), &[])
    }

    /// As [`Flagsvc::start`], with `extra` arguments after the bench's own.
    pub fn start_with(
        runtime: &tokio::runtime::Runtime,
        binary: &Path,
        (database_url, log): (&str, &Path),
        extra: &[&str],
    ) -> Result<Flagsvc> {
        let port = TcpListener::bind("127.0.0.1:0")
            .context("finding a free port")?
            .local_addr()?
            .port();
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let log_file = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let spawned_at = Instant::now();
        let child = Command::new(binary)
            .args(["--bind", &address.to_string()])
            .args(["--database-url", database_url])
            .args(["--bootstrap-token", TOKEN])
            .args([
                "--rate-limit",
                "0",
                "--sdk-rate-limit",
                "0",
                "--log",
                "warn",
            ])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut server = Flagsvc {
            child,
            address,
            start_up: Duration::ZERO,
            log: log.to_path_buf(),
        };
        server.start_up = runtime.block_on(server.wait_until_answering(spawned_at))?;
        Ok(server)
    }

    async fn wait_until_answering(&mut self, spawned_at: Instant) -> Result<Duration> {
        let root = Request::get("/api/v2");
        loop {
            let mut connection = Connection::new(self.address, TOKEN);
            if let Ok(response) = connection.send(&root).await {
                if response.is_success() {
                    return Ok(spawned_at.elapsed());
                }
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "flagsvc exited with {status} before answering (log: {})",
                    self.log.display()
                );
            }
            if spawned_at.elapsed() > START_TIMEOUT {
                bail!(
                    "flagsvc did not answer on {} within {START_TIMEOUT:?} (log: {})",
                    self.address,
                    self.log.display()
                );
            }
            tokio::time::sleep(START_POLL).await;
        }
    }
}
