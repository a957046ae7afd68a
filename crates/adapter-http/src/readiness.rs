//! The database's readiness, as a background job checks it, and the other checks `/readyz` runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use service::Service;

/// How often the database is asked whether it is ready (by a background job, on a connection of
/// its own, whatever the number of probes: a flood of `/readyz` costs the database nothing more).
pub const READY_CHECK_EVERY: Duration = Duration::from_secs(1);

/// A database check older than this (the last one has not finished since: the database stalls)
/// makes the replica unready; so does having no check at all this long after the first probe.
pub const READY_TIMEOUT: Duration = Duration::from_secs(3);

/// A part of the process besides the database that must run for the replica to be ready (the
/// webhook delivery worker, say): `Err` says why it does not.
pub type ReadinessCheck = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The database's readiness now, as the background job that checks it every
/// [`READY_CHECK_EVERY`] (`background::DatabaseReadiness`) last found it: the last check's outcome
/// while it is recent, waiting up to [`READY_TIMEOUT`] for a first one. Without that job (a
/// process that runs none) the database is never found ready.
pub(crate) async fn database(service: &Service) -> Result<(), String> {
    let asked = Instant::now();
    loop {
        match service.last_readiness() {
            Some((at, outcome)) if at.elapsed() < READY_TIMEOUT => {
                return outcome.map_err(|not_ready| not_ready.0)
            }
            Some((at, _)) => {
                return Err(format!(
                    "the database has not answered a check for {} s",
                    at.elapsed().as_secs()
                ))
            }
            None if asked.elapsed() >= READY_TIMEOUT => {
                return Err("the database has not answered its first check".to_owned())
            }
            None => actix_web::rt::time::sleep(Duration::from_millis(10)).await,
        }
    }
}
