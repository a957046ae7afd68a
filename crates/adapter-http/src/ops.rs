//! What operators and load balancers ask of a replica, outside the API: `GET /healthz` (the
//! process answers) and `GET /readyz` (it can serve: its database answers, the schema is
//! migrated, and every background part the binary registered runs). Neither needs an access
//! token, counts against a rate limit, or reads a request body.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use domain::FieldError;
use serde::Serialize;
use service::Service;

use crate::error::ApiError;
use crate::AppState;

/// How often the database is asked whether it is ready (on a thread and a connection of its
/// own, whatever the number of probes: a flood of `/readyz` costs the database nothing more).
pub const READY_CHECK_EVERY: Duration = Duration::from_secs(1);

/// A database check older than this (the last one has not finished since: the database stalls)
/// makes the replica unready; so does having no check at all this long after the first probe.
pub const READY_TIMEOUT: Duration = Duration::from_secs(3);

/// A part of the process besides the database that must run for the replica to be ready (the
/// webhook delivery worker, say): `Err` says why it does not.
pub type ReadinessCheck = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// One line of `/readyz`'s answer when ready.
#[derive(Debug, Serialize)]
struct Checked {
    name: String,
    ok: bool,
}

/// An operations endpoint at `path`: `handler` answers GET and HEAD (a probe may use either);
/// any other method is 405 with `Allow`.
pub(crate) fn resource<F, Args>(path: &str, handler: F) -> actix_web::Resource
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    web::resource(path)
        .route(web::get().to(handler.clone()))
        .route(web::head().to(handler))
        .default_service(web::to(|req: actix_web::HttpRequest| async move {
            Err::<HttpResponse, ApiError>(
                ApiError::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "method_not_allowed",
                    format!(
                        "{} {} is not allowed: GET or HEAD",
                        req.method(),
                        req.path()
                    ),
                )
                .with_header(
                    actix_web::http::header::ALLOW,
                    actix_web::http::header::HeaderValue::from_static("GET, HEAD"),
                ),
            )
        }))
}

/// `GET /healthz`: 200 while the process serves HTTP at all; asks nothing of the database.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

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
    async fn database(&self) -> Result<(), String> {
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

fn lock<V>(mutex: &Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `GET /readyz`: 200 when the database answered its last check (see [`ReadinessMonitor`]),
/// its schema has every migration of this release, and each registered [`ReadinessCheck`]
/// passes; 503 with the reasons otherwise (`not_ready`, one entry of `errors` per failed check).
///
/// # Errors
/// The 503.
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let monitor = state
        .readiness
        .get_or_init(|| ReadinessMonitor::start(&state.service))
        .clone();
    let database = monitor.database().await;
    let mut checks = vec![("database".to_owned(), database)];
    for (name, check) in &state.readiness_checks {
        checks.push((name.clone(), check()));
    }
    let failed: Vec<FieldError> = checks
        .iter()
        .filter_map(|(name, outcome)| {
            outcome.as_ref().err().map(|reason| FieldError {
                attribute: name.clone(),
                reason: reason.clone(),
            })
        })
        .collect();
    if failed.is_empty() {
        let checks: Vec<Checked> = checks
            .into_iter()
            .map(|(name, _)| Checked { name, ok: true })
            .collect();
        return Ok(
            HttpResponse::Ok().json(serde_json::json!({"status": "ready", "checks": checks}))
        );
    }
    let message = failed
        .iter()
        .map(|f| format!("{}: {}", f.attribute, f.reason))
        .collect::<Vec<_>>()
        .join("; ");
    let mut error = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "not_ready", message);
    error.errors = failed;
    Err(error)
}
