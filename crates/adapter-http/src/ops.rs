//! What operators and load balancers ask of a replica, outside the API: `GET /healthz` (the
//! process answers) and `GET /readyz` (it can serve: its database answers, the schema is
//! migrated, and every background part the binary registered runs). Neither needs an access
//! token, counts against a rate limit, or reads a request body.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use domain::FieldError;
use serde::Serialize;

use crate::error::ApiError;
use crate::AppState;

/// How long `/readyz` waits for a database connection: a probe must answer well within a load
/// balancer's timeout, and a database slower than this to hand out a connection is not ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(1);

/// A part of the process besides the database that must run for the replica to be ready (the
/// webhook delivery worker, say): `Err` says why it does not.
pub type ReadinessCheck = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// One line of `/readyz`'s answer when ready.
#[derive(Debug, Serialize)]
struct Checked {
    name: String,
    ok: bool,
}

/// `GET /healthz`: 200 while the process serves HTTP at all; asks nothing of the database.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

/// `GET /readyz`: 200 when the database answers within [`READY_TIMEOUT`], its schema has every
/// migration of this release, and each registered [`ReadinessCheck`] passes; 503 with the
/// reasons otherwise (`not_ready`, one entry of `errors` per failed check).
///
/// # Errors
/// The 503.
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let service = state.service.clone();
    let database = match actix_web::rt::time::timeout(
        READY_TIMEOUT * 2,
        web::block(move || service.check_ready(READY_TIMEOUT)),
    )
    .await
    {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(err))) => Err(err.to_string()),
        Ok(Err(_)) => Err("the server is overloaded: no thread to ask the database".to_owned()),
        Err(_) => Err(format!(
            "the database did not answer within {} ms",
            (READY_TIMEOUT * 2).as_millis()
        )),
    };
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
