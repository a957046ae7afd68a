//! The database's readiness, checked on a thread of its own, and the other checks `/readyz` runs.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use service::Service;

/// How often the database is asked whether it is ready (on a thread and a connection of its
/// own, whatever the number of probes: a flood of `/readyz` costs the database nothing more).
pub const READY_CHECK_EVERY: Duration = Duration::from_secs(1);

/// A database check older than this (the last one has not finished since: the database stalls)
/// makes the replica unready; so does having no check at all this long after the first probe.
pub const READY_TIMEOUT: Duration = Duration::from_secs(3);

/// A part of the process besides the database that must run for the replica to be ready (the
/// webhook delivery worker, say): `Err` says why it does not.
pub type ReadinessCheck = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The database's readiness as a thread of its own last found it.
#[derive(Debug, Default)]
pub(crate) struct ReadinessMonitor {
    last: Mutex<Option<(Instant, Result<(), String>)>>,
}

impl ReadinessMonitor {
    /// Starts asking `service`'s store every [`READY_CHECK_EVERY`]; the thread ends once the
    /// service or the monitor is dropped.
    pub(crate) fn start(service: &Arc<Service>) -> Arc<Self> {
        let monitor = Arc::new(Self::default());
        let (service, watched) = (Arc::downgrade(service), Arc::downgrade(&monitor));
        let spawned = std::thread::Builder::new()
            .name("flagsvc-readiness".into())
            .spawn(move || loop {
                let (Some(service), Some(monitor)) = (service.upgrade(), watched.upgrade()) else {
                    return;
                };
                let outcome = service.check_ready().map_err(|not_ready| not_ready.0);
                *lock(&monitor.last) = Some((Instant::now(), outcome));
                drop((service, monitor));
                std::thread::sleep(READY_CHECK_EVERY);
            });
        if let Err(err) = spawned {
            *lock(&monitor.last) = Some((
                Instant::now(),
                Err(format!("the database is not being checked: {err}")),
            ));
        }
        monitor
    }

    /// The database's readiness now: the last check's outcome while it is recent, waiting up to
    /// [`READY_TIMEOUT`] for a first one.
    pub(crate) async fn database(&self) -> Result<(), String> {
        let asked = Instant::now();
        loop {
            let last = lock(&self.last).clone();
            match last {
                Some((at, outcome)) if at.elapsed() < READY_TIMEOUT => return outcome,
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
}

pub(crate) fn lock<V>(mutex: &Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
