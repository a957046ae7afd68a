//! Every error the API sends: `{"code", "message", "id"}` with one status per code.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use domain::FieldError;
use serde::Serialize;
use service::ServiceError;

/// An error response body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Machine-readable code: `invalid_request`, `unauthorized`, `forbidden`, `not_found`,
    /// `method_not_allowed`, `key_exists`, `optimistic_locking_error`, `payload_too_large`,
    /// `unsupported_media_type`, `patch_failed`, `rate_limited`, `service_unavailable`,
    /// `request_timeout`, `headers_too_large`, `internal_error`; `not_ready` from `GET /readyz`.
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
    /// The request's id (also in the `X-Request-Id` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub id: Option<String>,
    /// Per-field details of a validation error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

/// An API error: status, code and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Error code.
    pub code: &'static str,
    /// Message.
    pub message: String,
    /// Field details.
    pub errors: Vec<FieldError>,
    /// Extra headers (`Allow`, `Retry-After`).
    pub headers: Vec<(header::HeaderName, HeaderValue)>,
}

impl ApiError {
    /// An error with `status` and `code`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            errors: vec![],
            headers: vec![],
        }
    }

    /// 400 `invalid_request`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 401 `unauthorized`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 403 `forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 415 `unsupported_media_type`.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            message,
        )
    }

    /// 403 `forbidden` for a beta route called without `Svc-API-Version: beta`.
    pub fn beta_route() -> Self {
        Self::forbidden("this route is in beta: send the header Svc-API-Version: beta")
    }

    /// 500 `internal_error`; what went wrong is logged by whoever calls this, never sent.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "internal error",
        )
    }

    /// 500 `internal_error` for a response body that cannot be serialized (a bug).
    pub fn unserializable(err: &serde_json::Error) -> Self {
        log::error!("internal error: a response cannot be serialized: {err}");
        Self::internal()
    }

    /// 413 `payload_too_large`.
    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the request body is larger than the limit of {limit} bytes"),
        )
    }

    /// Adds a header to the response.
    pub fn with_header(mut self, name: header::HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// The error for a status produced outside the handlers (routing, extractors).
    pub fn from_status(status: StatusCode, message: String) -> Self {
        let code = match status.as_u16() {
            400 => "invalid_request",
            401 => "unauthorized",
            403 => "forbidden",
            404 => "not_found",
            405 => "method_not_allowed",
            408 => "request_timeout",
            409 => "optimistic_locking_error",
            413 => "payload_too_large",
            415 => "unsupported_media_type",
            422 => "patch_failed",
            431 => "headers_too_large",
            429 => "rate_limited",
            503 => "service_unavailable",
            s if s < 500 => "invalid_request",
            _ => "internal_error",
        };
        Self::new(status, code, message)
    }

    /// The response, with the request id in the body.
    pub fn to_response(&self, request_id: Option<&str>) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        for (name, value) in &self.headers {
            response.insert_header((name.clone(), value.clone()));
        }
        response.json(ErrorBody {
            code: self.code.to_owned(),
            message: self.message.clone(),
            id: request_id.map(str::to_owned),
            errors: self.errors.clone(),
        })
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        // The request id is added by the middleware, which sees every response.
        self.to_response(None)
    }
}

/// THE table: every outcome of a use case, as the API tells it (status, code, message). Handlers
/// never build errors for use-case outcomes; they pass the [`ServiceError`] through `?`.
impl From<ServiceError> for ApiError {
    fn from(err: ServiceError) -> Self {
        let message = err.to_string();
        match err {
            ServiceError::Invalid { errors, .. } => Self {
                errors,
                ..ApiError::invalid(message)
            },
            ServiceError::DuplicateEmail(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, "duplicate_email", message)
            }
            ServiceError::EmailTaken(_) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "email_already_exists_in_account",
                message,
            ),
            ServiceError::Unauthenticated(_) => ApiError::unauthorized(message),
            ServiceError::NotAnAccessToken(_) => ApiError::unauthorized(format!(
                "{message}; create an access token with POST /api/v2/tokens"
            )),
            ServiceError::NotPermitted(_) => ApiError::forbidden(message),
            ServiceError::NotFound(_) => ApiError::not_found(message),
            ServiceError::KeyTaken(_) => ApiError::new(StatusCode::CONFLICT, "key_exists", message),
            // A stale version, a resource still used by others and a state that refuses the
            // change are one code: the client re-reads the resource before trying again.
            ServiceError::VersionConflict(_)
            | ServiceError::StillReferenced(_)
            | ServiceError::WrongState(_) => {
                ApiError::new(StatusCode::CONFLICT, "optimistic_locking_error", message)
            }
            ServiceError::PatchFailed(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "patch_failed", message)
            }
            ServiceError::Unavailable(_) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "service_unavailable",
                message,
            ),
            ServiceError::Internal(_) => {
                log::error!("internal error: {}", with_causes(&err));
                ApiError::internal()
            }
        }
    }
}

/// Query-string values parsed in the handlers (paging, filters, sort) are the use cases' input:
/// refused as the service refuses invalid input.
impl From<domain::query::QueryError> for ApiError {
    fn from(err: domain::query::QueryError) -> Self {
        ServiceError::from(err).into()
    }
}

/// `err` and the errors underneath it, for the log.
fn with_causes(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use service::{Cause, Detail};

    use super::*;

    fn detail() -> Detail {
        Detail::caused_by("what happened", Cause::Serialization("cause".into()))
    }

    /// Every service error, with the status and code it must keep (the API's contract).
    #[test]
    fn every_service_error_has_its_status_and_code() {
        let table = [
            (ServiceError::invalid("bad"), 400, "invalid_request"),
            (
                ServiceError::DuplicateEmail(detail()),
                400,
                "duplicate_email",
            ),
            (
                ServiceError::EmailTaken(detail()),
                400,
                "email_already_exists_in_account",
            ),
            (
                ServiceError::Unauthenticated("who".into()),
                401,
                "unauthorized",
            ),
            (
                ServiceError::NotAnAccessToken(domain::token::EnvironmentCredential::SdkKey),
                401,
                "unauthorized",
            ),
            (ServiceError::NotPermitted("no".into()), 403, "forbidden"),
            (ServiceError::NotFound("gone".into()), 404, "not_found"),
            (ServiceError::KeyTaken(detail()), 409, "key_exists"),
            (
                ServiceError::VersionConflict(detail()),
                409,
                "optimistic_locking_error",
            ),
            (
                ServiceError::StillReferenced(detail()),
                409,
                "optimistic_locking_error",
            ),
            (
                ServiceError::WrongState("owner".into()),
                409,
                "optimistic_locking_error",
            ),
            (ServiceError::PatchFailed(detail()), 422, "patch_failed"),
            (
                ServiceError::Unavailable(detail()),
                503,
                "service_unavailable",
            ),
            (ServiceError::Internal(detail()), 500, "internal_error"),
        ];
        for (err, status, code) in table {
            // A new variant must be added to the table above (and to `From<ServiceError>`).
            match &err {
                ServiceError::Invalid { .. }
                | ServiceError::DuplicateEmail(_)
                | ServiceError::EmailTaken(_)
                | ServiceError::Unauthenticated(_)
                | ServiceError::NotAnAccessToken(_)
                | ServiceError::NotPermitted(_)
                | ServiceError::NotFound(_)
                | ServiceError::KeyTaken(_)
                | ServiceError::VersionConflict(_)
                | ServiceError::StillReferenced(_)
                | ServiceError::WrongState(_)
                | ServiceError::PatchFailed(_)
                | ServiceError::Unavailable(_)
                | ServiceError::Internal(_) => {}
            }
            let what = format!("{err:?}");
            let api = ApiError::from(err);
            assert_eq!(api.status.as_u16(), status, "{what}");
            assert_eq!(api.code, code, "{what}");
        }
    }

    #[test]
    fn messages_are_the_service_messages_except_for_internal_errors() {
        let api = ApiError::from(ServiceError::KeyTaken(detail()));
        assert_eq!(api.message, "what happened");
        let api = ApiError::from(ServiceError::Internal(detail()));
        assert_eq!(api.message, "internal error");
        let api = ApiError::from(ServiceError::Invalid {
            message: "name: empty".into(),
            errors: vec![FieldError::new("name", "empty")],
        });
        assert_eq!((api.message.as_str(), api.errors.len()), ("name: empty", 1));
        // The service names the credential; the adapter adds where an access token comes from.
        let api = ApiError::from(ServiceError::NotAnAccessToken(
            domain::token::EnvironmentCredential::MobileKey,
        ));
        assert_eq!(
            api.message,
            "this is an environment's mobile key, which cannot be used as an API access token; \
             create an access token with POST /api/v2/tokens"
        );
    }

    #[test]
    fn the_log_line_of_an_error_shows_its_causes() {
        let err = ServiceError::Internal(Detail::caused_by(
            "a webhook payload could not be serialized",
            Cause::Serialization("key must be a string".into()),
        ));
        assert_eq!(
            with_causes(&err),
            "a webhook payload could not be serialized: key must be a string"
        );
    }
}
