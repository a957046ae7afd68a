//! `/api/v2/members`.

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use domain::member::NewMemberForm;
use domain::query::MemberQuery;

use crate::error::{ApiError, ErrorBody};
use crate::list_params::{LIMIT_20, OFFSET};
use crate::middleware::Auth;
use crate::wire::model;
use crate::wire::{
    call, collection, json_body, json_patch_only, page_links, Member, Members, QueryParams,
};
use crate::AppState;
use service::use_case;

/// Lists the account's members.
#[utoipa::path(
    tag = "Account members",
    params(
        ("filter" = Option<String>, Query, description = "Comma-separated `field:value` (AND): `query` (substring of email or name), `role` (`|`-joined, any; `admin` includes the owner), `email` (`|`-joined, any)"),
        ("sort" = Option<String>, Query, description = "`displayName` or `lastSeen`; `-` prefix for descending; default `displayName`"),
        ("limit" = Option<u32>, Query, description = LIMIT_20),
        ("offset" = Option<u64>, Query, description = OFFSET),
    ),
    responses((status = 200, body = Members))
)]
#[get("/members")]
pub async fn list_members(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
) -> Result<web::Json<Members>, ApiError> {
    let params = QueryParams::of(&req);
    let query = MemberQuery::parse(
        params.get("filter"),
        params.get("sort"),
        params.get("limit"),
        params.get("offset"),
    )?;
    let page = query.page;
    let list = call(&state, move |s| {
        s.members()
            .list_members(&caller.may(use_case::ListMembers)?, &query)
    })
    .await?;
    let items = Member::all_of(&list.items);
    Ok(web::Json(collection(
        &req,
        (page.limit, page.offset),
        items,
        list.total,
    )))
}

/// Invites up to 50 members at once, all or none (`_pendingInvite: true`). A taken email is a
/// 400 with code `email_already_exists_in_account`, an email given twice `duplicate_email`.
#[utoipa::path(
    tag = "Account members",
    request_body = Vec<model::NewMemberForm>,
    responses((status = 201, body = Members))
)]
#[post("/members")]
pub async fn invite_members(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let permit = caller.may(use_case::InviteMembers)?;
    let forms: Vec<NewMemberForm> = json_body(&req, &body)?;
    let members = call(&state, move |s| s.members().invite_members(&permit, forms)).await?;
    let total = members.len() as u64;
    Ok(HttpResponse::Created().json(Members {
        links: page_links(
            &req,
            u32::try_from(total.max(1)).unwrap_or(u32::MAX),
            0,
            members.len(),
            total,
        ),
        total_count: total,
        items: Member::all_of(&members),
    }))
}

/// One member; `me` is the caller.
#[utoipa::path(
    tag = "Account members",
    params(("id" = String, Path, description = "Member `_id`, or `me`")),
    responses((status = 200, body = Member), (status = 404, body = ErrorBody))
)]
#[get("/members/{id}")]
pub async fn get_member(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<web::Json<Member>, ApiError> {
    let id = path.into_inner();
    let member = call(&state, move |s| {
        s.members()
            .get_member(&caller.may(use_case::GetMember)?, &id)
    })
    .await?;
    Ok(web::Json(Member::from(&member)))
}

/// Changes a member by JSON Patch: `/role`, `/firstName`, `/lastName`, `/customRoles` (keys of
/// existing custom roles, at most 50; an unknown key is a 422). Nobody gives a role above
/// their own; the owner transfers ownership by setting another member's role to `owner` (and
/// becomes an admin).
#[utoipa::path(
    tag = "Account members",
    params(("id" = String, Path, description = "Member `_id`, or `me`")),
    request_body(content = Vec<crate::wire::JsonPatchOperation>, description = "JSON Patch operations, or `{comment, patch}`", content_type = "application/json"),
    responses(
        (status = 200, body = Member),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A `test` operation failed", body = ErrorBody),
        (status = 422, description = "Another path, or a role change the rules refuse", body = ErrorBody),
    )
)]
#[patch("/members/{id}")]
pub async fn patch_member(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<Member>, ApiError> {
    let permit = caller.may(use_case::PatchMember)?;
    let patch = json_patch_only(&req, &body)?;
    let id = path.into_inner();
    let member = call(&state, move |s| {
        s.members().patch_member(&permit, &id, &patch)
    })
    .await?;
    Ok(web::Json(Member::from(&member)))
}

/// Adds a member to teams (`me`: the caller): it holds their custom roles from its next
/// request. Teams it is in already are left as they are. Admin or owner.
#[utoipa::path(
    tag = "Account members",
    params(("id" = String, Path, description = "Member `_id`, or `me`")),
    request_body = model::MemberTeamsPost,
    responses(
        (status = 201, description = "The member, with its teams", body = Member),
        (status = 404, body = ErrorBody),
    )
)]
#[post("/members/{id}/teams")]
pub async fn add_member_to_teams(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let permit = caller.may(use_case::PatchMember)?;
    let form: MemberTeamsForm = json_body(&req, &body)?;
    let id = path.into_inner();
    let member = call(&state, move |s| {
        s.teams().add_member_to_teams(&permit, &id, &form.team_keys)
    })
    .await?;
    Ok(HttpResponse::Created().json(Member::from(&member)))
}

/// `POST /members/{id}/teams` body, as read.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MemberTeamsForm {
    team_keys: Vec<String>,
}

/// Deletes a member with its personal tokens (its service tokens pass to the owner). The owner
/// cannot be deleted (409).
#[utoipa::path(
    tag = "Account members",
    params(("id" = String, Path, description = "Member `_id`")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody), (status = 409, description = "The owner", body = ErrorBody))
)]
#[delete("/members/{id}")]
pub async fn delete_member(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path.into_inner();
    call(&state, move |s| {
        s.members()
            .delete_member(&caller.may(use_case::DeleteMember)?, &id)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}
