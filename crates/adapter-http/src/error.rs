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
    /// `request_timeout`, `headers_too_large`, `internal_error`.
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

impl From<ServiceError> for ApiError {
    fn from(err: ServiceError) -> Self {
        match err {
            ServiceError::Invalid { message, errors } => Self {
                errors,
                ..ApiError::invalid(message)
            },
            ServiceError::Rejected { code, message } => {
                ApiError::new(StatusCode::BAD_REQUEST, code, message)
            }
            ServiceError::Unauthorized(m) => ApiError::unauthorized(m),
            ServiceError::Forbidden(m) => ApiError::forbidden(m),
            ServiceError::NotFound(m) => ApiError::not_found(m),
            ServiceError::KeyExists(m) => ApiError::new(StatusCode::CONFLICT, "key_exists", m),
            ServiceError::VersionConflict(m) => {
                ApiError::new(StatusCode::CONFLICT, "optimistic_locking_error", m)
            }
            ServiceError::PatchFailed(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "patch_failed", m)
            }
            ServiceError::Unavailable(m) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "service_unavailable", m)
            }
            ServiceError::Internal(m) => {
                log::error!("internal error: {m}");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    "internal error",
                )
            }
        }
    }
}
