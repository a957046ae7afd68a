//! What flags serve a context, and why: `POST /projects/{projectKey}/environments/
//! {environmentKey}/flags/evaluate` (the original's), and `.../flags/{flagKey}/explain`
//! (flagsvc's: the evaluation's trace). The context in the body is evaluated, never stored or
//! logged.

use actix_web::{post, web, HttpRequest};
use domain::evaluation::{Context, Explanation, Reason};
use domain::query::{FlagQuery, Page};
use serde::Serialize;
use serde_json::Value;
use service::use_case;

use crate::error::{ApiError, ErrorBody};
use crate::middleware::Auth;
use crate::wire::link::{Link, Links};
use crate::wire::{call, json_body, QueryParams};
use crate::AppState;

/// One flag's evaluation for the context.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ContextInstanceEvaluation {
    /// The flag's name.
    pub name: String,
    /// The flag's key.
    pub key: String,
    /// The value served; `null` when the flag serves none (off without an off variation, or an
    /// error): an SDK would serve the application's default.
    #[serde(rename = "_value")]
    pub value: Value,
    /// Why.
    pub reason: Reason,
    /// `self` (the flag).
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

/// The flags of an environment evaluated for a context.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextInstanceEvaluations {
    /// One per flag of the page.
    pub items: Vec<ContextInstanceEvaluation>,
    /// How many flags matched the filter.
    pub total_count: u64,
    /// `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

/// The context of the body, or a 400 saying what is wrong with it.
fn context_of(req: &HttpRequest, body: &[u8]) -> Result<Context, ApiError> {
    let value: Value = json_body(req, body)?;
    Context::from_json(&value)
        .map_err(|e| ApiError::from_status(actix_web::http::StatusCode::BAD_REQUEST, e.to_string()))
}

/// Evaluates the flags of an environment for the context in the body (a context as the SDKs
/// send it: `{"kind": "user", "key": "ann", ...}`, a multi-kind context, or the older user
/// form), as the original's SDKs would: each flag's value and reason. Archived flags are left
/// out. Anyone who may read the project may ask; the context is not stored.
#[utoipa::path(
    tag = "Contexts",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("environmentKey" = String, Path, description = "Environment key"),
        ("limit" = Option<u32>, Query, description = "Flags per page; a larger value than 100 is served as 100. Without it, every flag of the environment is evaluated. 0, a negative or a non-integer value: 400"),
        ("offset" = Option<u64>, Query, description = "Where the page starts"),
        ("filter" = Option<String>, Query, description = "`query:<text>` (key or name) and `tags:<a>+<b>`, as for the flag list"),
    ),
    request_body(content = Object, description = "The context", content_type = "application/json"),
    responses(
        (status = 200, body = ContextInstanceEvaluations),
        (status = 400, description = "Not a valid context", body = ErrorBody),
        (status = 404, description = "Unknown project or environment", body = ErrorBody),
    )
)]
#[post("/projects/{projectKey}/environments/{environmentKey}/flags/evaluate")]
pub async fn evaluate_flags(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<ContextInstanceEvaluations>, ApiError> {
    let permit = caller.may(use_case::EvaluateFlags)?;
    let params = QueryParams::of(&req);
    let page = match params.get("limit") {
        None => None,
        limit => Some(Page::parse(limit, params.get("offset"), 20)?),
    };
    // In the flag list's order (creation date).
    let query = FlagQuery::parse(params.get("filter"), None, None, page)?;
    let context = context_of(&req, &body)?;
    let (project, environment) = path.into_inner();
    let keys = (project.clone(), environment.clone());
    let evaluated = call(&state, move |s| {
        s.evaluations()
            .evaluate_flags(&permit, (&keys.0, &keys.1), &context, &query)
    })
    .await?;
    let items = evaluated
        .items
        .into_iter()
        .map(|item| ContextInstanceEvaluation {
            links: Links::from([(
                "self".to_owned(),
                Link::api(format!("/api/v2/flags/{project}/{}", item.key)),
            )]),
            name: item.name,
            key: item.key,
            value: item.detail.value.unwrap_or(Value::Null),
            reason: item.detail.reason,
        })
        .collect();
    Ok(web::Json(ContextInstanceEvaluations {
        items,
        total_count: evaluated.total,
        links: Links::from([("self".to_owned(), Link::api(req.uri().to_string()))]),
    }))
}

/// How a flag is evaluated for the context in the body, step by step: its prerequisites (each
/// with its own trace), the individual target that named the context, each rule and clause
/// checked (with the value the context had), the segments a clause asked and why, the bucket a
/// rollout put the context in with each variation's range, and the result. Anyone who may read
/// the project may ask; the context is not stored.
#[utoipa::path(
    tag = "Contexts",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("environmentKey" = String, Path, description = "Environment key"),
        ("flagKey" = String, Path, description = "Flag key"),
    ),
    request_body(content = Object, description = "The context", content_type = "application/json"),
    responses(
        (status = 200, body = Explanation),
        (status = 400, description = "Not a valid context", body = ErrorBody),
        (status = 404, description = "Unknown project, environment or flag", body = ErrorBody),
    )
)]
#[post("/projects/{projectKey}/environments/{environmentKey}/flags/{flagKey}/explain")]
pub async fn explain_flag(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String, String)>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<Explanation>, ApiError> {
    let permit = caller.may(use_case::EvaluateFlags)?;
    let context = context_of(&req, &body)?;
    let (project, environment, flag) = path.into_inner();
    let explained = call(&state, move |s| {
        s.evaluations()
            .explain_flag(&permit, (&project, &environment, &flag), &context)
    })
    .await?;
    Ok(web::Json(explained))
}
