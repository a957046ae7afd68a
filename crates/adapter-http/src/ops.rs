//! What operators and load balancers ask of a replica, outside the API: `GET /healthz` (the
//! process answers) and `GET /readyz` (it can serve: its database answers, the schema is
//! migrated, and every background part the binary registered runs). Neither needs an access
//! token, counts against a rate limit, or reads a request body.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use domain::FieldError;
use serde::Serialize;

use crate::error::ApiError;
use crate::AppState;

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

/// `GET /readyz`: 200 when the database answered its last check (checked every second by a background job),
/// its schema has every migration of this release, and each registered [`ReadinessCheck`]
/// passes; 503 with the reasons otherwise (`not_ready`, one entry of `errors` per failed check).
///
/// # Errors
/// The 503.
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let database = crate::readiness::database(&state.service).await;
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
