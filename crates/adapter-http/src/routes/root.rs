//! The API root, versions and the OpenAPI document.

use crate::wire::link::{Link, Links};
use actix_web::{get, web, HttpResponse};
use domain::version::ApiVersion;
use serde::Serialize;

use crate::middleware::Version;

/// `GET /api/v2`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RootResponse {
    /// The resource collections.
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

/// `GET /api/v2/versions`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionsResponse {
    /// Every valid dated version.
    pub valid_versions: Vec<i32>,
    /// The newest version.
    pub latest_version: i32,
    /// The version used for this request.
    pub current_version: i32,
    /// Whether this request was made with `Svc-API-Version: beta`.
    pub beta: bool,
}

/// The OpenAPI document, serialised once at start-up.
#[derive(Debug, Clone)]
pub struct OpenApiJson(pub String);

/// Links to the resource collections.
#[utoipa::path(
    tag = "Other",
    description = "Links to the resource collections. Needs no access token.",
    responses((status = 200, body = RootResponse))
)]
#[get("")]
pub async fn root() -> web::Json<RootResponse> {
    let links = Links::from([
        ("projects".to_owned(), Link::api("/api/v2/projects")),
        ("tokens".to_owned(), Link::api("/api/v2/tokens")),
        ("members".to_owned(), Link::api("/api/v2/members")),
        ("auditlog".to_owned(), Link::api("/api/v2/auditlog")),
        ("webhooks".to_owned(), Link::api("/api/v2/webhooks")),
        ("versions".to_owned(), Link::api("/api/v2/versions")),
        ("openapi".to_owned(), Link::api("/api/v2/openapi.json")),
    ]);
    web::Json(RootResponse { links })
}

/// The API versions, and the one used for this request.
#[utoipa::path(tag = "Other", responses((status = 200, body = VersionsResponse)))]
#[get("/versions")]
pub async fn versions(Version(version): Version) -> web::Json<VersionsResponse> {
    web::Json(VersionsResponse {
        valid_versions: ApiVersion::VALID_DATES.to_vec(),
        latest_version: ApiVersion::CURRENT.date(),
        current_version: version.date(),
        beta: version == ApiVersion::Beta,
    })
}

/// This OpenAPI 3 document. Needs no access token.
#[utoipa::path(tag = "Other", responses((status = 200, description = "The OpenAPI document", body = Object)))]
#[get("/openapi.json")]
pub async fn openapi(doc: web::Data<OpenApiJson>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(doc.0.clone())
}
