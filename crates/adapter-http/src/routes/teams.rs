//! `/api/v2/teams`: teams, groups of members sharing custom roles.

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use domain::query::TeamQuery;
use domain::team::{TeamPatch, TeamPost};
use service::use_case;

use crate::error::{ApiError, ErrorBody};
use crate::list_params::{LIMIT_20, OFFSET};
use crate::middleware::Auth;
use crate::wire::model;
use crate::wire::{access, with_access};
use crate::wire::{
    call, collection, json_body, parse_json, patch_form, PatchForm, QueryParams, Team, Teams,
};
use crate::AppState;
use serde_json::Value;

/// A team semantic patch (`Content-Type: application/json; domain-model=svc.semanticpatch`).
// A schema only (no doc line here: it would join the description): the domain reads the body
// (`TeamPatch::parse`).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
#[serde(rename_all = "camelCase")]
pub struct TeamSemanticPatchBody {
    /// A comment for the audit log.
    pub comment: Option<String>,
    /// Applied in order, all or none; at most 1000 member ids in all.
    #[schema(min_items = 1, max_items = 1000)]
    pub instructions: Vec<model::TeamInstruction>,
}

/// Lists the account's teams, by key (or name), with how many members each has. Every member
/// but `no_access` ones may read them.
#[utoipa::path(
    tag = "Teams",
    params(
        ("filter" = Option<String>, Query, description = "Comma-separated `field:value`: `query` (substring of the key or the name, case-insensitive)"),
        ("sort" = Option<String>, Query, description = "`key` or `name`; `-` prefix for descending; default `key`"),
        ("limit" = Option<u32>, Query, description = LIMIT_20),
        ("offset" = Option<u64>, Query, description = OFFSET),
    ),
    responses((status = 200, body = Teams))
)]
#[get("/teams")]
pub async fn list_teams(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
) -> Result<web::Json<Teams>, ApiError> {
    let params = QueryParams::of(&req);
    let query = TeamQuery::parse(
        params.get("filter"),
        params.get("sort"),
        params.get("limit"),
        params.get("offset"),
    )?;
    let page = query.page;
    let list = call(&state, move |s| {
        s.teams()
            .list_teams(&caller.may(use_case::ListTeams)?, &query)
    })
    .await?;
    let items: Vec<Team> = list.items.iter().map(Team::from).collect();
    Ok(web::Json(collection(
        &req,
        (page.limit, page.offset),
        items,
        list.total,
    )))
}

/// Creates a team (201) with its custom roles and first members; its members hold its roles at
/// their next request. Admin or owner.
#[utoipa::path(
    tag = "Teams",
    request_body = model::TeamPost,
    responses(
        (status = 201, body = Team),
        (status = 409, description = "The key is taken", body = ErrorBody),
    )
)]
#[post("/teams")]
pub async fn create_team(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let permit = caller.may(use_case::CreateTeam)?;
    let post: TeamPost = json_body(&req, &body)?;
    let team = call(&state, move |s| s.teams().create_team(&permit, post)).await?;
    let access = access::to_team(&caller, &team.team);
    Ok(HttpResponse::Created().json(with_access(&Team::from(&team), &access)?))
}

/// One team.
#[utoipa::path(
    tag = "Teams",
    params(("teamKey" = String, Path, description = "Team key")),
    responses((status = 200, body = Team), (status = 404, body = ErrorBody))
)]
#[get("/teams/{teamKey}")]
pub async fn get_team(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<web::Json<Value>, ApiError> {
    let key = path.into_inner();
    let asking = caller.clone();
    let team = call(&state, move |s| {
        s.teams().get_team(&asking.may(use_case::GetTeam)?, &key)
    })
    .await?;
    let access = access::to_team(&caller, &team.team);
    Ok(web::Json(with_access(&Team::from(&team), &access)?))
}

/// Changes a team by semantic patch (`Content-Type: application/json;
/// domain-model=svc.semanticpatch`, or plain `application/json` with an `instructions` object,
/// as the original's clients send it): `addCustomRoles`, `removeCustomRoles`, `addMembers`,
/// `removeMembers`, `replaceMembers`, `updateName`, `updateDescription`. Each instruction is
/// decided by the caller's policies (`updateTeamCustomRoles`, `updateTeamMembers`,
/// `updateTeamName`, `updateTeamDescription` on `team/{key}`). Admin or owner.
#[utoipa::path(
    tag = "Teams",
    params(("teamKey" = String, Path, description = "Team key")),
    request_body(content = TeamSemanticPatchBody, content_type = "application/json; domain-model=svc.semanticpatch"),
    responses(
        (status = 200, body = Team),
        (status = 400, description = "Not a team semantic patch, or an instruction names an unknown role or member", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 415, description = "Not a semantic patch: teams change by semantic patch only", body = ErrorBody),
    )
)]
#[patch("/teams/{teamKey}")]
pub async fn patch_team(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<Value>, ApiError> {
    let permit = caller.may(use_case::PatchTeam)?;
    let form = patch_form(&req)?;
    let value = parse_json(&body)?;
    // Teams change by semantic patch alone, so a plain JSON object of instructions is one too:
    // the original's clients send it so. A JSON Patch (an array) or a merge patch is not.
    let instructions = form == PatchForm::Semantic
        || (form == PatchForm::Json && value.get("instructions").is_some());
    if !instructions {
        return Err(ApiError::unsupported_media_type(
            "teams change by semantic patch: send {\"instructions\": [...]} (Content-Type: application/json; domain-model=svc.semanticpatch)",
        ));
    }
    let patch = TeamPatch::parse(value).map_err(|e| ApiError::invalid(e.to_string()))?;
    let key = path.into_inner();
    let team = call(&state, move |s| s.teams().patch_team(&permit, &key, &patch)).await?;
    let access = access::to_team(&caller, &team.team);
    Ok(web::Json(with_access(&Team::from(&team), &access)?))
}

/// Deletes a team; its members leave it and lose the custom roles it gave them. Admin or owner.
#[utoipa::path(
    tag = "Teams",
    params(("teamKey" = String, Path, description = "Team key")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody))
)]
#[delete("/teams/{teamKey}")]
pub async fn delete_team(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let key = path.into_inner();
    call(&state, move |s| {
        s.teams()
            .delete_team(&caller.may(use_case::DeleteTeam)?, &key)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}
