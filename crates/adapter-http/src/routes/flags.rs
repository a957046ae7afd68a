//! `/api/v2/flags/{projectKey}`.

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use domain::flag::{FlagCopyPost, FlagPost};
use domain::instruction::SemanticPatch;
use domain::query::{FlagQuery, Page};
use domain::version::ApiVersion;
use service::{use_case, CachedAnswer, EnvironmentSelection, FlagChange, FlagListRequest};

use crate::error::{ApiError, ErrorBody};
use crate::list_params::{LIMIT_FLAGS, OFFSET};
use crate::middleware::{Auth, Version};
use crate::wire::model;
use crate::wire::{
    answer_request, call, call_queued, collection, flag_shown_to, json_body, keep_answer,
    kept_answer, parse_json, patch_form, with_flag_access, DependentFlags, DocumentPatch,
    FeatureFlags, Flag, JsonPatchOperation, PatchForm, QueryParams, SemanticPatchBody,
};
use crate::AppState;

/// Creates a flag; it appears in every environment of the project with targeting off (on with
/// `isFlagOn`), with `initialPrerequisites` in every environment. Its key must follow the
/// project's `namingConvention` (400 naming it otherwise). With `clone=<flagKey>` the new flag
/// takes that flag's variations and its targeting in every environment (on/off and
/// prerequisites included); the body gives its key and name, and may give description, tags and
/// `temporary`.
#[utoipa::path(
    tag = "Feature flags",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("clone" = Option<String>, Query, description = "Key of a flag to clone"),
    ),
    request_body = model::FlagPost,
    responses((status = 201, body = Flag), (status = 404, body = ErrorBody), (status = 409, description = "The key is taken", body = ErrorBody))
)]
#[post("/flags/{projectKey}")]
pub async fn create_flag(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let project = path.into_inner();
    let key = project.clone();
    let flag = match QueryParams::of(&req).get("clone").map(str::to_owned) {
        Some(source) => {
            let permit = caller.may_in(use_case::CloneFlag, &project)?;
            let post: FlagPost = json_body(&req, &body)?;
            call(&state, move |s| {
                s.flags().clone_flag(&permit, &project, &source, post)
            })
            .await?
        }
        None => {
            let permit = caller.may_in(use_case::CreateFlag, &project)?;
            let post: FlagPost = json_body(&req, &body)?;
            let queued = state.service.queue_create_flag(&permit, &project, post);
            call_queued(&state, queued).await?
        }
    };
    Ok(HttpResponse::Created().json(flag_shown_to(&caller, &key, flag)))
}

/// Copies parts of one environment's configuration of a flag onto another environment.
#[utoipa::path(
    tag = "Feature flags",
    params(("projectKey" = String, Path, description = "Project key"), ("flagKey" = String, Path, description = "Flag key")),
    request_body = model::FlagCopyPost,
    responses(
        (status = 201, body = Flag),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A `currentVersion` does not match", body = ErrorBody),
    )
)]
#[post("/flags/{projectKey}/{flagKey}/copy")]
pub async fn copy_flag(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let permit = caller.may_in(use_case::CopyFlagConfig, &path.0)?;
    let post: FlagCopyPost = json_body(&req, &body)?;
    let (project, key) = path.into_inner();
    let project_key = project.clone();
    let flag = call(&state, move |s| {
        s.flags().copy_flag_config(&permit, &project, &key, &post)
    })
    .await?;
    Ok(HttpResponse::Created().json(flag_shown_to(&caller, &project_key, flag)))
}

/// Flags that use this flag as a prerequisite. Beta: needs `Svc-API-Version: beta`.
#[utoipa::path(
    tag = "Feature flags (beta)",
    params(("projectKey" = String, Path, description = "Project key"), ("flagKey" = String, Path, description = "Flag key")),
    responses((status = 200, body = DependentFlags), (status = 404, body = ErrorBody))
)]
#[get("/flags/{projectKey}/{flagKey}/dependent-flags")]
pub async fn dependent_flags(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    Version(version): Version,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<web::Json<DependentFlags>, ApiError> {
    if version != ApiVersion::Beta {
        return Err(ApiError::beta_route());
    }
    let (project, key) = path.into_inner();
    let (project_key, flag_key) = (project.clone(), key.clone());
    let dependents = call(&state, move |s| {
        s.flags()
            .dependent_flags(&caller.may(use_case::DependentFlags)?, &project, &key)
    })
    .await?;
    Ok(web::Json(DependentFlags::of(
        &project_key,
        &flag_key,
        req.path(),
        dependents,
    )))
}

/// Lists a project's flags.
///
/// Under `Svc-API-Version: 20240415` the list is paged (20 by default) and carries
/// `environments` only for the environments named by `env`; under `20220603` it lists every flag
/// unless `limit` is given and always carries every environment (or those named by `env`).
#[utoipa::path(
    tag = "Feature flags",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("env" = Option<Vec<String>>, Query, description = "Include these environments' configurations (repeatable)"),
        ("filter" = Option<String>, Query, description = "Comma-separated `field:value` (AND): `query` (substring of key or name), `tags` (`+`-joined, all), `state` (`live`, `deprecated` or `archived`; default: all but archived), `type` (`temporary` or `permanent`), `maintainerId`"),
        ("tag" = Option<String>, Query, description = "Only flags with this tag"),
        ("sort" = Option<String>, Query, description = "`creationDate`, `key` or `name`; `-` prefix for descending; default `creationDate`"),
        ("limit" = Option<u32>, Query, description = LIMIT_FLAGS),
        ("offset" = Option<u64>, Query, description = OFFSET),
        ("summary" = Option<bool>, Query, description = "Default true: leave out each environment's targets, rules and prerequisites"),
    ),
    responses((status = 200, body = FeatureFlags), (status = 404, body = ErrorBody))
)]
#[get("/flags/{projectKey}")]
pub async fn list_flags(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    Version(version): Version,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::of(&req);
    let envs = params.list("env")?;
    let paged = version != ApiVersion::V20220603 || params.get("limit").is_some();
    let page = Page::parse(params.get("limit"), params.get("offset"), 20)?;
    let query = FlagQuery::parse(
        params.get("filter"),
        params.get("tag"),
        params.get("sort"),
        paged.then_some(page),
    )?;
    let environments = match (envs.is_empty(), version) {
        (false, _) => EnvironmentSelection::Only(envs),
        (true, ApiVersion::V20220603) => EnvironmentSelection::All,
        (true, _) => EnvironmentSelection::None,
    };
    let summary = params.flag("summary", true)?;
    let project = path.into_inner();
    let project_key = project.clone();
    let request = FlagListRequest {
        query,
        environments,
    };
    // From this replica's read cache when it can answer, without a trip to the blocking pool.
    let answered = answer_request(&req, version);
    let answer = CachedAnswer::Project(&project_key);
    // Shared answers show members: only callers who see every member share them.
    let shared = caller.sees_every_member();
    if shared {
        if let Some(kept) = state.service.cached_answer(&caller, &answer, &answered) {
            return Ok(kept_answer(kept?));
        }
    }
    let ticket = state.service.read_ticket(&answer).filter(|_| shared);
    let asking = caller.clone();
    let list = call(&state, move |s| {
        s.flags()
            .list_flags(&asking.may(use_case::ListFlags)?, &project, &request)
    })
    .await?;
    let items = list
        .items
        .into_iter()
        .map(|view| {
            flag_shown_to(&caller, &project_key, view)
                .list_item(summary)
                .map_err(|e| ApiError::unserializable(&e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let asked = if paged {
        (page.limit, page.offset)
    } else {
        (u32::try_from(list.total.max(1)).unwrap_or(u32::MAX), 0)
    };
    let page: FeatureFlags = collection(&req, asked, items, list.total);
    keep_answer(&state, ticket, &answer, &answered, &page)
}

/// One flag, with its configuration in every environment (or those named by `env`).
#[utoipa::path(
    tag = "Feature flags",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("flagKey" = String, Path, description = "Flag key"),
        ("env" = Option<Vec<String>>, Query, description = "Only these environments (repeatable)"),
        ("expand" = Option<String>, Query, description = "`_access` adds the caller's `_access` to each environment's configuration (any other value: 400; 400 as well when it would pass 1 MiB: name fewer environments with `env`)"),
    ),
    responses((status = 200, body = Flag), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody))
)]
#[get("/flags/{projectKey}/{flagKey}")]
pub async fn get_flag(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    Version(version): Version,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::of(&req);
    let envs = params.list("env")?;
    let expand = params.list("expand")?;
    if let Some(other) = expand.iter().find(|e| *e != "_access") {
        return Err(ApiError::invalid(format!(
            "cannot expand '{other}': expand takes _access"
        )));
    }
    let (project, key) = path.into_inner();
    if !expand.is_empty() {
        // The caller's own answer: neither taken from the read cache nor kept by it.
        // Every environment is read: a change to what they share is decided in each.
        let asking = caller.clone();
        let project_key = project.clone();
        let mut view = call(&state, move |s| {
            s.flags()
                .get_flag(&asking.may(use_case::GetFlag)?, &project_key, &key, &[])
        })
        .await?;
        let shown: Vec<&str> = view
            .flag
            .environments
            .keys()
            .map(String::as_str)
            .filter(|env| envs.is_empty() || envs.iter().any(|e| e == env))
            .collect();
        let accesses =
            crate::wire::access::to_flag_environments(&caller, &project, &view.flag, &shown)?;
        if !envs.is_empty() {
            view.flag.environments.retain(|env, _| envs.contains(env));
        }
        let answer = with_flag_access(&flag_shown_to(&caller, &project, view), accesses)?;
        return Ok(HttpResponse::Ok().json(answer));
    }
    // From this replica's read cache when it can answer, without a trip to the blocking pool.
    let request = answer_request(&req, version);
    let answer = CachedAnswer::Flag {
        project: &project,
        flag: &key,
    };
    // Shared answers show members: only callers who see every member share them.
    let shared = caller.sees_every_member();
    if shared {
        if let Some(kept) = state.service.cached_answer(&caller, &answer, &request) {
            return Ok(kept_answer(kept?));
        }
    }
    let ticket = state.service.read_ticket(&answer).filter(|_| shared);
    let (project_key, flag_key) = (project.clone(), key.clone());
    let asking = caller.clone();
    let flag = call(&state, move |s| {
        s.flags().get_flag(
            &asking.may(use_case::GetFlag)?,
            &project_key,
            &flag_key,
            &envs,
        )
    })
    .await?;
    // Kept under the keys changes are told by: as stored (a lookup matches them exactly).
    let ticket = ticket.filter(|_| flag.flag.key.as_str() == key);
    keep_answer(
        &state,
        ticket,
        &answer,
        &request,
        &flag_shown_to(&caller, &project, flag),
    )
}

fn flag_change(req: &HttpRequest, body: &[u8]) -> Result<FlagChange, ApiError> {
    let form = patch_form(req)?;
    let value = parse_json(body)?;
    if form == PatchForm::Semantic {
        return Ok(FlagChange::Semantic(
            crate::wire::integers_leniently(value, SemanticPatch::parse)
                .map_err(|e| ApiError::invalid(e.to_string()))?,
        ));
    }
    Ok(match crate::wire::document_patch(form, value, true)? {
        DocumentPatch::Json(patch) => FlagChange::JsonPatch(patch),
        DocumentPatch::Merge { comment, merge } => FlagChange::MergePatch { comment, merge },
    })
}

/// Changes a flag by JSON Patch, JSON Merge Patch or semantic patch.
///
/// - JSON Patch (`application/json`): an array of RFC 6902 operations or `{comment, patch}`; any
///   path into the flag, e.g. `/environments/production/on`; `test` on `/_version` (or
///   `/version`, which reads the flag's `_version`) or `/environments/{env}/version` guards
///   against concurrent changes (409 `optimistic_locking_error` when it fails).
/// - Merge patch: `application/merge-patch+json`, or `{comment, merge}` as `application/json`.
/// - Semantic patch (`application/json; domain-model=svc.semanticpatch`):
///   `{environmentKey, comment, instructions: [{kind, ...}]}`, every instruction kind of
///   `Instruction`; environment-scoped kinds need `environmentKey`.
///
/// With `dryRun=true` nothing is stored: the answer is the flag as the change would make it.
#[utoipa::path(
    tag = "Feature flags",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("flagKey" = String, Path, description = "Flag key"),
        ("dryRun" = Option<bool>, Query, description = crate::wire::DRY_RUN_DESCRIPTION),
    ),
    request_body(
        description = "JSON Patch (an array, or `{comment, patch}`; `{comment, merge}` for a merge patch), merge patch or semantic patch, by Content-Type",
        content(
            (Vec<JsonPatchOperation> = "application/json"),
            (Object = "application/merge-patch+json"),
            (SemanticPatchBody = "application/json; domain-model=svc.semanticpatch"),
        )
    ),
    responses(
        (status = 200, body = Flag),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A `test` operation failed", body = ErrorBody),
        (status = 415, body = ErrorBody),
        (status = 422, description = "Read-only path, inapplicable operation or invalid result", body = ErrorBody),
    )
)]
#[patch("/flags/{projectKey}/{flagKey}")]
pub async fn patch_flag(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<Flag>, ApiError> {
    let permit = caller.may_in(use_case::PatchFlag, &path.0)?;
    let dry_run = QueryParams::of(&req).flag("dryRun", false)?;
    let change = flag_change(&req, &body)?;
    let (project, key) = path.into_inner();
    let project_key = project.clone();
    let flag = if dry_run {
        call(&state, move |s| {
            s.flags()
                .dry_run_patch_flag(&permit, &project, &key, &change)
        })
        .await?
    } else {
        let queued = state
            .service
            .queue_patch_flag(&permit, &project, &key, change);
        call_queued(&state, queued).await?
    };
    Ok(web::Json(flag_shown_to(&caller, &project_key, flag)))
}

/// Deletes a flag in every environment.
#[utoipa::path(
    tag = "Feature flags",
    params(("projectKey" = String, Path, description = "Project key"), ("flagKey" = String, Path, description = "Flag key")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody))
)]
#[delete("/flags/{projectKey}/{flagKey}")]
pub async fn delete_flag(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (project, key) = path.into_inner();
    call(&state, move |s| {
        s.flags()
            .delete_flag(&caller.may(use_case::DeleteFlag)?, &project, &key)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}
