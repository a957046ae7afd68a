//! `/api/v2/projects`.

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use domain::project::ProjectPost;
use domain::query::ProjectQuery;

use crate::error::{ApiError, ErrorBody};
use crate::list_params::{LIMIT_20, OFFSET};
use crate::middleware::Auth;
use crate::wire::model;
use crate::wire::{access, with_access};
use crate::wire::{
    call, collection, json_body, json_patch_only, ProjectExpanded, ProjectRep, Projects,
    QueryParams,
};
use crate::AppState;
use serde_json::Value;
use service::use_case;

/// Whether `expand` asks for the environments (`expand=environments`, the one value it takes).
///
/// # Errors
/// 400 naming another value.
fn wants_environments(params: &QueryParams) -> Result<bool, ApiError> {
    let expand = params.list("expand")?;
    if let Some(other) = expand.iter().find(|e| *e != "environments") {
        return Err(ApiError::invalid(format!(
            "cannot expand '{other}': expand takes environments"
        )));
    }
    Ok(!expand.is_empty())
}

/// Lists projects.
#[utoipa::path(
    tag = "Projects",
    params(
        ("filter" = Option<String>, Query, description = "Comma-separated `field:value`: `query` (substring of name or key), `tags` (`+`-joined, all), `keys` (`|`-joined, any)"),
        ("sort" = Option<String>, Query, description = "`name` or `createdOn`; `-` prefix for descending; default `createdOn`"),
        ("limit" = Option<u32>, Query, description = LIMIT_20),
        ("offset" = Option<u64>, Query, description = OFFSET),
        ("expand" = Option<String>, Query, description = "`environments` adds each project's environments (any other value: 400)"),
    ),
    responses((status = 200, body = Projects))
)]
#[get("/projects")]
pub async fn list_projects(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
) -> Result<web::Json<Projects>, ApiError> {
    let params = QueryParams::of(&req);
    let query = ProjectQuery::parse(
        params.get("filter"),
        params.get("sort"),
        params.get("limit"),
        params.get("offset"),
    )?;
    let expand = wants_environments(&params)?;
    let page = query.page;
    let list = call(&state, move |s| {
        s.projects()
            .list_projects(&caller.may(use_case::ListProjects)?, &query, expand)
    })
    .await?;
    let items: Vec<ProjectExpanded> = list.items.into_iter().map(ProjectExpanded::from).collect();
    Ok(web::Json(collection(
        &req,
        (page.limit, page.offset),
        items,
        list.total,
    )))
}

/// Creates a project; without `environments`, `test` and `production` are created with it.
/// `namingConvention` (a prefix and/or a case) is enforced on the keys of flags created or
/// cloned in it.
#[utoipa::path(
    tag = "Projects",
    request_body = model::ProjectPost,
    responses((status = 201, body = ProjectRep), (status = 409, description = "The key is taken", body = ErrorBody))
)]
#[post("/projects")]
pub async fn create_project(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let permit = caller.may(use_case::CreateProject)?;
    let post: ProjectPost = json_body(&req, &body)?;
    let created = call(&state, move |s| s.projects().create_project(&permit, post)).await?;
    let access = access::to_project(&caller, &created.project);
    Ok(HttpResponse::Created().json(with_access(&ProjectRep::from(created), &access)?))
}

/// One project.
#[utoipa::path(
    tag = "Projects",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("expand" = Option<String>, Query, description = "`environments` adds the project's environments (any other value: 400)"),
    ),
    responses((status = 200, body = ProjectExpanded), (status = 404, body = ErrorBody))
)]
#[get("/projects/{projectKey}")]
pub async fn get_project(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<web::Json<Value>, ApiError> {
    let expand = wants_environments(&QueryParams::of(&req))?;
    let key = path.into_inner();
    let asking = caller.clone();
    let project = call(&state, move |s| {
        s.projects()
            .get_project(&asking.may(use_case::GetProject)?, &key, expand)
    })
    .await?;
    let access = access::to_project(&caller, &project.project);
    Ok(web::Json(with_access(
        &ProjectExpanded::from(project),
        &access,
    )?))
}

/// Changes a project by JSON Patch (`/name`, `/tags`, `/defaultClientSideAvailability`,
/// `/includeInSnippetByDefault`, `/namingConvention`: the rule for flags created afterwards).
#[utoipa::path(
    tag = "Projects",
    params(("projectKey" = String, Path, description = "Project key")),
    request_body(content = Vec<Object>, description = "JSON Patch operations, or `{comment, patch}`", content_type = "application/json"),
    responses(
        (status = 200, body = ProjectRep),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A `test` operation failed", body = ErrorBody),
        (status = 415, body = ErrorBody),
        (status = 422, description = "Read-only path or invalid result", body = ErrorBody),
    )
)]
#[patch("/projects/{projectKey}")]
pub async fn patch_project(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<Value>, ApiError> {
    let permit = caller.may_in(use_case::PatchProject, path.as_str())?;
    let patch = json_patch_only(&req, &body)?;
    let key = path.into_inner();
    let updated = call(&state, move |s| {
        s.projects().patch_project(&permit, &key, &patch)
    })
    .await?;
    let access = access::to_project(&caller, &updated.project);
    Ok(web::Json(with_access(&ProjectRep::from(updated), &access)?))
}

/// Deletes a project with all its environments and flags.
#[utoipa::path(
    tag = "Projects",
    params(("projectKey" = String, Path, description = "Project key")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody))
)]
#[delete("/projects/{projectKey}")]
pub async fn delete_project(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let key = path.into_inner();
    call(&state, move |s| {
        s.projects()
            .delete_project(&caller.may(use_case::DeleteProject)?, &key)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}
