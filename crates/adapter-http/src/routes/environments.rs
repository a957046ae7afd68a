//! `/api/v2/projects/{projectKey}/environments`.

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use domain::environment::EnvironmentPost;
use domain::query::EnvironmentQuery;

use crate::error::{ApiError, ErrorBody};
use crate::list_params::{LIMIT_20, OFFSET};
use crate::middleware::{Auth, Version};
use crate::wire::model;
use crate::wire::{access, with_access};
use crate::wire::{
    answer_request, call, collection, expiry_param, json_body, json_patch_only, keep_answer,
    kept_answer, Environment, Environments, QueryParams,
};
use crate::AppState;
use serde_json::Value;
use service::{use_case, CachedAnswer};

/// Lists a project's environments.
#[utoipa::path(
    tag = "Environments",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("filter" = Option<String>, Query, description = "Comma-separated `field:value` (AND): `query` (substring of name or key), `tags` (`+`-joined, all), `key`, `name`, `critical` (exact)"),
        ("tags" = Option<String>, Query, description = "`+`-joined tags that must all be present"),
        ("sort" = Option<String>, Query, description = "`name`, `createdOn` or `critical`; `-` prefix for descending; default `createdOn`"),
        ("limit" = Option<u32>, Query, description = LIMIT_20),
        ("offset" = Option<u64>, Query, description = OFFSET),
    ),
    responses((status = 200, body = Environments), (status = 404, body = ErrorBody))
)]
#[get("/projects/{projectKey}/environments")]
pub async fn list_environments(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    Version(version): Version,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::of(&req);
    let query = EnvironmentQuery::parse(
        params.get("filter"),
        params.get("tags"),
        params.get("sort"),
        params.get("limit"),
        params.get("offset"),
    )?;
    let page = query.page;
    let project = path.into_inner();
    // From this replica's read cache when it can answer, without a trip to the blocking pool.
    let request = answer_request(&req, version);
    let answer = CachedAnswer::Project(&project);
    if let Some(kept) = state.service.cached_answer(&caller, &answer, &request) {
        return Ok(kept_answer(kept?));
    }
    let ticket = state.service.read_ticket(&answer);
    let key = project.clone();
    let list = call(&state, move |s| {
        s.environments()
            .list_environments(&caller.may(use_case::ListEnvironments)?, &key, &query)
    })
    .await?;
    let items = Environment::all_of(&project, &list.items);
    let listed: Environments = collection(&req, (page.limit, page.offset), items, list.total);
    keep_answer(&state, ticket, &answer, &request, &listed)
}

/// Creates an environment; every flag of the project gets a configuration in it (targeting off).
///
/// With `source: {key}` the environment is a clone of that environment of the project: every
/// flag's configuration there (targeting, targets, rules, fallthrough, off variation,
/// prerequisites, event tracking) and every segment of it are copied in the same transaction, at
/// version 1. `source.version` is refused: environments have no version.
#[utoipa::path(
    tag = "Environments",
    params(("projectKey" = String, Path, description = "Project key")),
    request_body = model::EnvironmentPost,
    responses(
        (status = 201, body = Environment),
        (status = 400, description = "Invalid body, a `source` that is not an environment of the project, `source.version`, or a clone that would make a flag larger than 1 MiB", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The key is taken", body = ErrorBody),
    )
)]
#[post("/projects/{projectKey}/environments")]
pub async fn create_environment(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let permit = caller.may_in(use_case::CreateEnvironment, path.as_str())?;
    let post: EnvironmentPost = json_body(&req, &body)?;
    let project = path.into_inner();
    let key = project.clone();
    let env = call(&state, move |s| {
        s.environments().create_environment(&permit, &key, post)
    })
    .await?;
    let access = access::to_environment(&caller, &project, &env);
    Ok(HttpResponse::Created().json(with_access(&Environment::of(&project, &env), &access)?))
}

/// One environment.
#[utoipa::path(
    tag = "Environments",
    params(("projectKey" = String, Path, description = "Project key"), ("environmentKey" = String, Path, description = "Environment key")),
    responses((status = 200, body = Environment), (status = 404, body = ErrorBody))
)]
#[get("/projects/{projectKey}/environments/{environmentKey}")]
pub async fn get_environment(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
) -> Result<web::Json<Value>, ApiError> {
    let (project, key) = path.into_inner();
    let project_key = project.clone();
    let asking = caller.clone();
    let env = call(&state, move |s| {
        s.environments()
            .get_environment(&asking.may(use_case::GetEnvironment)?, &project_key, &key)
    })
    .await?;
    let access = access::to_environment(&caller, &project, &env);
    Ok(web::Json(with_access(
        &Environment::of(&project, &env),
        &access,
    )?))
}

/// Changes an environment by JSON Patch (`/name`, `/color`, `/defaultTtl`, `/secureMode`,
/// `/defaultTrackEvents`, `/requireComments`, `/confirmChanges`, `/critical`, `/tags`).
#[utoipa::path(
    tag = "Environments",
    params(("projectKey" = String, Path, description = "Project key"), ("environmentKey" = String, Path, description = "Environment key")),
    request_body(content = Vec<Object>, description = "JSON Patch operations, or `{comment, patch}`", content_type = "application/json"),
    responses(
        (status = 200, body = Environment),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A `test` operation failed", body = ErrorBody),
        (status = 415, body = ErrorBody),
        (status = 422, description = "Read-only path or invalid result", body = ErrorBody),
    )
)]
#[patch("/projects/{projectKey}/environments/{environmentKey}")]
pub async fn patch_environment(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<Value>, ApiError> {
    let permit = caller.may_in(use_case::PatchEnvironment, &path.0)?;
    let patch = json_patch_only(&req, &body)?;
    let (project, key) = path.into_inner();
    let project_key = project.clone();
    let env = call(&state, move |s| {
        s.environments()
            .patch_environment(&permit, &project_key, &key, &patch)
    })
    .await?;
    let access = access::to_environment(&caller, &project, &env);
    Ok(web::Json(with_access(
        &Environment::of(&project, &env),
        &access,
    )?))
}

/// Deletes an environment and every flag's configuration in it.
#[utoipa::path(
    tag = "Environments",
    params(("projectKey" = String, Path, description = "Project key"), ("environmentKey" = String, Path, description = "Environment key")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody))
)]
#[delete("/projects/{projectKey}/environments/{environmentKey}")]
pub async fn delete_environment(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (project, key) = path.into_inner();
    call(&state, move |s| {
        s.environments().delete_environment(
            &caller.may(use_case::DeleteEnvironment)?,
            &project,
            &key,
        )
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Gives the environment a new SDK key. With `expiry` (epoch ms) the old key stays valid for SDKs
/// until then. SDK keys are never access tokens.
#[utoipa::path(
    tag = "Environments",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("environmentKey" = String, Path, description = "Environment key"),
        ("expiry" = Option<i64>, Query, description = "Until when the old key stays valid (epoch ms); absent or past: it stops at once"),
    ),
    responses((status = 200, body = Environment), (status = 404, body = ErrorBody))
)]
#[post("/projects/{projectKey}/environments/{environmentKey}/apiKey")]
pub async fn reset_sdk_key(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<web::Json<Value>, ApiError> {
    let expiry = expiry_param(&req)?;
    let (project, key) = path.into_inner();
    let project_key = project.clone();
    let asking = caller.clone();
    let env = call(&state, move |s| {
        s.environments().reset_sdk_key(
            &asking.may(use_case::ResetEnvironmentKey)?,
            &project_key,
            &key,
            expiry,
        )
    })
    .await?;
    let access = access::to_environment(&caller, &project, &env);
    Ok(web::Json(with_access(
        &Environment::of(&project, &env),
        &access,
    )?))
}

/// Gives the environment a new mobile key; the old one stops at once.
#[utoipa::path(
    tag = "Environments",
    params(("projectKey" = String, Path, description = "Project key"), ("environmentKey" = String, Path, description = "Environment key")),
    responses((status = 200, body = Environment), (status = 404, body = ErrorBody))
)]
#[post("/projects/{projectKey}/environments/{environmentKey}/mobileKey")]
pub async fn reset_mobile_key(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
) -> Result<web::Json<Value>, ApiError> {
    let (project, key) = path.into_inner();
    let project_key = project.clone();
    let asking = caller.clone();
    let env = call(&state, move |s| {
        s.environments().reset_mobile_key(
            &asking.may(use_case::ResetEnvironmentKey)?,
            &project_key,
            &key,
        )
    })
    .await?;
    let access = access::to_environment(&caller, &project, &env);
    Ok(web::Json(with_access(
        &Environment::of(&project, &env),
        &access,
    )?))
}
