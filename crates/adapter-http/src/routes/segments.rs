//! `/api/v2/segments/{projectKey}/{environmentKey}`.

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use domain::query::SegmentQuery;
use domain::segment::{SegmentPatch, SegmentPost};
use service::{use_case, SegmentChange};

use crate::error::{ApiError, ErrorBody};
use crate::list_params::{LIMIT_20, OFFSET};
use crate::middleware::Auth;
use crate::wire::model;
use crate::wire::{access, with_access};
use crate::wire::{
    call, collection, json_body, parse_json, patch_form, DocumentPatch, JsonPatchOperation,
    PatchForm, QueryParams, Segment, SegmentDetail, Segments,
};
use crate::AppState;
use serde_json::Value;

/// A segment semantic patch (`Content-Type: application/json; domain-model=svc.semanticpatch`).
// A schema only (no doc line here: it would join the description): the domain reads the body
// (`SegmentPatch::parse`).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
#[serde(rename_all = "camelCase")]
pub struct SegmentSemanticPatchBody {
    /// Required: the segment's environment.
    pub environment_key: String,
    /// A comment for the audit log.
    pub comment: Option<String>,
    /// Applied in order, all or none; at most 1000 instructions and 1500 target values in all.
    #[schema(max_items = 1000)]
    pub instructions: Vec<model::SegmentInstruction>,
}

/// Lists an environment's segments.
#[utoipa::path(
    tag = "Segments",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("environmentKey" = String, Path, description = "Environment key"),
        ("filter" = Option<String>, Query, description = "Comma-separated `field:value` (AND): `query` (substring of key, name or description), `tags` (`+`-joined, all)"),
        ("sort" = Option<String>, Query, description = "`creationDate`, `name` or `lastModified`; `-` prefix for descending; default `creationDate`"),
        ("limit" = Option<u32>, Query, description = LIMIT_20),
        ("offset" = Option<u64>, Query, description = OFFSET),
    ),
    responses((status = 200, body = Segments), (status = 404, body = ErrorBody))
)]
#[get("/segments/{projectKey}/{environmentKey}")]
pub async fn list_segments(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<web::Json<Segments>, ApiError> {
    let params = QueryParams::of(&req);
    let query = SegmentQuery::parse(
        params.get("filter"),
        params.get("sort"),
        params.get("limit"),
        params.get("offset"),
    )?;
    let page = query.page;
    let (project, env) = path.into_inner();
    let (project_key, env_key) = (project.clone(), env.clone());
    let list = call(&state, move |s| {
        s.segments()
            .list_segments(&caller.may(use_case::ListSegments)?, &project, &env, &query)
    })
    .await?;
    let items: Vec<Segment> = list
        .items
        .into_iter()
        .map(|segment| Segment::of(&project_key, &env_key, segment))
        .collect();
    Ok(web::Json(collection(
        &req,
        (page.limit, page.offset),
        items,
        list.total,
    )))
}

/// Creates a segment; targets and rules are added by PATCH.
#[utoipa::path(
    tag = "Segments",
    params(("projectKey" = String, Path, description = "Project key"), ("environmentKey" = String, Path, description = "Environment key")),
    request_body = model::SegmentPost,
    responses((status = 201, body = Segment), (status = 404, body = ErrorBody), (status = 409, description = "The key is taken", body = ErrorBody))
)]
#[post("/segments/{projectKey}/{environmentKey}")]
pub async fn create_segment(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let permit = caller.may_in(use_case::CreateSegment, &path.0)?;
    let post: SegmentPost = json_body(&req, &body)?;
    let (project, env) = path.into_inner();
    let (project_key, env_key) = (project.clone(), env.clone());
    let segment = call(&state, move |s| {
        s.segments().create_segment(&permit, &project, &env, post)
    })
    .await?;
    let access = access::to_segment(&caller, &project_key, &env_key, &segment);
    let shown = Segment::of(&project_key, &env_key, segment);
    Ok(HttpResponse::Created().json(with_access(&shown, &access)?))
}

/// One segment, with `_flags`: the flags whose rules use it.
#[utoipa::path(
    tag = "Segments",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("environmentKey" = String, Path, description = "Environment key"),
        ("segmentKey" = String, Path, description = "Segment key"),
    ),
    responses((status = 200, body = SegmentDetail), (status = 404, body = ErrorBody))
)]
#[get("/segments/{projectKey}/{environmentKey}/{segmentKey}")]
pub async fn get_segment(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String, String)>,
) -> Result<web::Json<Value>, ApiError> {
    let (project, env, key) = path.into_inner();
    let (project_key, env_key) = (project.clone(), env.clone());
    let asking = caller.clone();
    let found = call(&state, move |s| {
        s.segments()
            .get_segment(&asking.may(use_case::GetSegment)?, &project, &env, &key)
    })
    .await?;
    let access = access::to_segment(&caller, &project_key, &env_key, &found.segment);
    let shown = SegmentDetail::of(&project_key, &env_key, found);
    Ok(web::Json(with_access(&shown, &access)?))
}

fn segment_change(req: &HttpRequest, body: &[u8]) -> Result<SegmentChange, ApiError> {
    let form = patch_form(req)?;
    let value = parse_json(body)?;
    if form == PatchForm::Semantic {
        return Ok(SegmentChange::Semantic(
            crate::wire::integers_leniently(value, SegmentPatch::parse)
                .map_err(|e| ApiError::invalid(e.to_string()))?,
        ));
    }
    Ok(match crate::wire::document_patch(form, value, true)? {
        DocumentPatch::Json(patch) => SegmentChange::JsonPatch(patch),
        DocumentPatch::Merge { comment, merge } => SegmentChange::MergePatch { comment, merge },
    })
}

/// Changes a segment by JSON Patch, merge patch or segment semantic patch (by Content-Type).
/// With `dryRun=true` nothing is stored: the answer is the segment as the change would make it.
#[utoipa::path(
    tag = "Segments",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("environmentKey" = String, Path, description = "Environment key"),
        ("segmentKey" = String, Path, description = "Segment key"),
        ("dryRun" = Option<bool>, Query, description = crate::wire::DRY_RUN_DESCRIPTION),
    ),
    request_body(
        description = "JSON Patch (array, `{comment, patch}` or `{comment, merge}`), merge patch or semantic patch",
        content(
            (Vec<JsonPatchOperation> = "application/json"),
            (Object = "application/merge-patch+json"),
            (SegmentSemanticPatchBody = "application/json; domain-model=svc.semanticpatch"),
        )
    ),
    responses(
        (status = 200, body = Segment),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A `test` operation failed", body = ErrorBody),
        (status = 422, description = "Read-only path, inapplicable operation or invalid result", body = ErrorBody),
    )
)]
#[patch("/segments/{projectKey}/{environmentKey}/{segmentKey}")]
pub async fn patch_segment(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String, String)>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<Value>, ApiError> {
    let permit = caller.may_in(use_case::PatchSegment, &path.0)?;
    let dry_run = QueryParams::of(&req).flag("dryRun", false)?;
    let change = segment_change(&req, &body)?;
    let (project, env, key) = path.into_inner();
    let (project_key, env_key) = (project.clone(), env.clone());
    let segment = call(&state, move |s| {
        if dry_run {
            s.segments()
                .dry_run_patch_segment(&permit, &project, &env, &key, &change)
        } else {
            s.segments()
                .patch_segment(&permit, &project, &env, &key, &change)
        }
    })
    .await?;
    let access = access::to_segment(&caller, &project_key, &env_key, &segment);
    let shown = Segment::of(&project_key, &env_key, segment);
    Ok(web::Json(with_access(&shown, &access)?))
}

/// Deletes a segment; 409 while a flag's rules use it.
#[utoipa::path(
    tag = "Segments",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("environmentKey" = String, Path, description = "Environment key"),
        ("segmentKey" = String, Path, description = "Segment key"),
    ),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody), (status = 409, description = "Used by a flag", body = ErrorBody))
)]
#[delete("/segments/{projectKey}/{environmentKey}/{segmentKey}")]
pub async fn delete_segment(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (project, env, key) = path.into_inner();
    call(&state, move |s| {
        s.segments()
            .delete_segment(&caller.may(use_case::DeleteSegment)?, &project, &env, &key)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}
