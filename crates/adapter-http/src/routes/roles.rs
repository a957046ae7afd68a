//! `/api/v2/roles`: custom roles.

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use domain::custom_role::CustomRolePost;
use domain::query::CustomRoleQuery;
use service::{use_case, CustomRoleChange};

use crate::error::{ApiError, ErrorBody};
use crate::list_params::{LIMIT_20, OFFSET};
use crate::middleware::Auth;
use crate::wire::model;
use crate::wire::{access, with_access};
use crate::wire::{
    call, collection, document_patch, json_body, parse_json, patch_form, CustomRole, CustomRoles,
    DocumentPatch, JsonPatchOperation, QueryParams,
};
use crate::AppState;
use serde_json::Value;

/// Lists the account's custom roles. Every member but `no_access` ones may read them.
#[utoipa::path(
    tag = "Custom roles",
    params(
        ("filter" = Option<String>, Query, description = "Comma-separated `field:value`: `query` (substring of the key or the name, case-insensitive)"),
        ("sort" = Option<String>, Query, description = "`key` or `name`; `-` prefix for descending; default `key`"),
        ("limit" = Option<u32>, Query, description = LIMIT_20),
        ("offset" = Option<u64>, Query, description = OFFSET),
    ),
    responses((status = 200, body = CustomRoles))
)]
#[get("/roles")]
pub async fn list_custom_roles(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
) -> Result<web::Json<CustomRoles>, ApiError> {
    let params = QueryParams::of(&req);
    let query = CustomRoleQuery::parse(
        params.get("filter"),
        params.get("sort"),
        params.get("limit"),
        params.get("offset"),
    )?;
    let page = query.page;
    let list = call(&state, move |s| {
        s.custom_roles()
            .list_custom_roles(&caller.may(use_case::ListCustomRoles)?, &query)
    })
    .await?;
    let items: Vec<CustomRole> = list.items.iter().map(CustomRole::from).collect();
    Ok(web::Json(collection(
        &req,
        (page.limit, page.offset),
        items,
        list.total,
    )))
}

/// Creates a custom role (201). Its statements are checked: each specifier by the grammar and
/// each action against the catalogue of `docs/roles.md`; a role is at most 32 KiB of JSON, and
/// its key is not a built-in role's (`reader`, `writer`, `admin`, `owner`, `no_access`). Admin
/// or owner.
#[utoipa::path(
    tag = "Custom roles",
    request_body = model::CustomRolePost,
    responses(
        (status = 201, body = CustomRole),
        (status = 409, description = "The key is taken", body = ErrorBody),
    )
)]
#[post("/roles")]
pub async fn create_custom_role(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let permit = caller.may(use_case::CreateCustomRole)?;
    let post: CustomRolePost = json_body(&req, &body)?;
    let role = call(&state, move |s| {
        s.custom_roles().create_custom_role(&permit, post)
    })
    .await?;
    let access = access::to_role(&caller, &role);
    Ok(HttpResponse::Created().json(with_access(&CustomRole::from(&role), &access)?))
}

/// One custom role.
#[utoipa::path(
    tag = "Custom roles",
    params(("customRoleKey" = String, Path, description = "Custom role key")),
    responses((status = 200, body = CustomRole), (status = 404, body = ErrorBody))
)]
#[get("/roles/{customRoleKey}")]
pub async fn get_custom_role(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<web::Json<Value>, ApiError> {
    let key = path.into_inner();
    let asking = caller.clone();
    let role = call(&state, move |s| {
        s.custom_roles()
            .get_custom_role(&asking.may(use_case::GetCustomRole)?, &key)
    })
    .await?;
    let access = access::to_role(&caller, &role);
    Ok(web::Json(with_access(&CustomRole::from(&role), &access)?))
}

fn role_change(req: &HttpRequest, body: &[u8]) -> Result<CustomRoleChange, ApiError> {
    let form = patch_form(req)?;
    Ok(match document_patch(form, parse_json(body)?, false)? {
        DocumentPatch::Json(patch) => CustomRoleChange::JsonPatch(patch),
        DocumentPatch::Merge { comment, merge } => CustomRoleChange::MergePatch { comment, merge },
    })
}

/// Changes a custom role by JSON Patch (or `{comment, patch}`), or by merge patch
/// (`application/merge-patch+json`, or `{comment, merge}`): `/name`, `/description`, `/policy`,
/// `/basePermissions`. Admin or owner.
#[utoipa::path(
    tag = "Custom roles",
    params(("customRoleKey" = String, Path, description = "Custom role key")),
    request_body(
        description = "JSON Patch (an array, or `{comment, patch}`; `{comment, merge}` for a merge patch) or merge patch, by Content-Type",
        content(
            (Vec<JsonPatchOperation> = "application/json"),
            (Object = "application/merge-patch+json"),
        )
    ),
    responses(
        (status = 200, body = CustomRole),
        (status = 415, description = "A semantic patch: roles take JSON Patch or merge patch", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A `test` operation failed", body = ErrorBody),
        (status = 422, description = "Another path or an invalid value", body = ErrorBody),
    )
)]
#[patch("/roles/{customRoleKey}")]
pub async fn patch_custom_role(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<Value>, ApiError> {
    let permit = caller.may(use_case::PatchCustomRole)?;
    let change = role_change(&req, &body)?;
    let key = path.into_inner();
    let role = call(&state, move |s| {
        s.custom_roles().patch_custom_role(&permit, &key, &change)
    })
    .await?;
    let access = access::to_role(&caller, &role);
    Ok(web::Json(with_access(&CustomRole::from(&role), &access)?))
}

/// Deletes a custom role. Admin or owner.
#[utoipa::path(
    tag = "Custom roles",
    params(("customRoleKey" = String, Path, description = "Custom role key")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody))
)]
#[delete("/roles/{customRoleKey}")]
pub async fn delete_custom_role(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let key = path.into_inner();
    call(&state, move |s| {
        s.custom_roles()
            .delete_custom_role(&caller.may(use_case::DeleteCustomRole)?, &key)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}
