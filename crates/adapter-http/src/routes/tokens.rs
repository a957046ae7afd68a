//! `/api/v2/tokens`.

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use domain::query::Page;
use domain::token::TokenPost;

use crate::error::{ApiError, ErrorBody};
use crate::list_params::{LIMIT_25, OFFSET};
use crate::middleware::Auth;
use crate::wire::model;
use crate::wire::{
    call, collection, expiry_param, json_body, json_patch_only, QueryParams, TokenRep, Tokens,
};
use crate::AppState;
use service::use_case;

/// Lists service tokens and the caller's personal tokens (with `showAll`, every member's).
/// Admin or owner.
#[utoipa::path(
    tag = "Access tokens",
    params(
        ("showAll" = Option<bool>, Query, description = "Every member's personal tokens too"),
        ("limit" = Option<u32>, Query, description = LIMIT_25),
        ("offset" = Option<u64>, Query, description = OFFSET),
    ),
    responses((status = 200, body = Tokens))
)]
#[get("/tokens")]
pub async fn list_tokens(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
) -> Result<web::Json<Tokens>, ApiError> {
    let params = QueryParams::of(&req);
    let show_all = params.flag("showAll", false)?;
    let page = Page::parse(params.get("limit"), params.get("offset"), 25)?;
    let list = call(&state, move |s| {
        s.tokens()
            .list_tokens(&caller.may(use_case::ListTokens)?, page, show_all)
    })
    .await?;
    let items: Vec<TokenRep> = list
        .items
        .into_iter()
        .map(|t| TokenRep::new(t, None))
        .collect();
    Ok(web::Json(collection(
        &req,
        (page.limit, page.offset),
        items,
        list.total,
    )))
}

/// Creates an access token; the response is the only time its secret is shown. Admin or owner.
#[utoipa::path(
    tag = "Access tokens",
    request_body = model::TokenPost,
    responses((status = 201, body = TokenRep))
)]
#[post("/tokens")]
pub async fn create_token(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let permit = caller.may(use_case::CreateToken)?;
    let post: TokenPost = json_body(&req, &body)?;
    let created = call(&state, move |s| s.tokens().create_token(&permit, post)).await?;
    Ok(HttpResponse::Created().json(TokenRep::new(created.token, Some(created.secret))))
}

/// One access token (its secret shows only the last four characters). Admin or owner.
#[utoipa::path(
    tag = "Access tokens",
    params(("id" = String, Path, description = "Token `_id`")),
    responses((status = 200, body = TokenRep), (status = 404, body = ErrorBody))
)]
#[get("/tokens/{id}")]
pub async fn get_token(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<web::Json<TokenRep>, ApiError> {
    let id = path.into_inner();
    let token = call(&state, move |s| {
        s.tokens().get_token(&caller.may(use_case::GetToken)?, &id)
    })
    .await?;
    Ok(web::Json(TokenRep::new(token, None)))
}

/// Deletes an access token; it stops working at once. Admin or owner.
#[utoipa::path(
    tag = "Access tokens",
    params(("id" = String, Path, description = "Token `_id`")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody))
)]
#[delete("/tokens/{id}")]
pub async fn delete_token(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path.into_inner();
    call(&state, move |s| {
        s.tokens()
            .delete_token(&caller.may(use_case::DeleteToken)?, &id)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Changes a token by JSON Patch: `/name`, `/description`, `/role`, `/defaultApiVersion`,
/// `/customRoleIds`, `/inlineRole` (giving policies needs the admin base role; an unknown role
/// `_id` is a 422). The role stays at most the caller's, and a personal token's at most its
/// member's.
#[utoipa::path(
    tag = "Access tokens",
    params(("id" = String, Path, description = "Token `_id`")),
    request_body(content = Vec<crate::wire::JsonPatchOperation>, description = "JSON Patch operations, or `{comment, patch}`", content_type = "application/json"),
    responses(
        (status = 200, body = TokenRep),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A `test` operation failed", body = ErrorBody),
        (status = 422, description = "Another path or an invalid value", body = ErrorBody),
    )
)]
#[patch("/tokens/{id}")]
pub async fn patch_token(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<TokenRep>, ApiError> {
    let permit = caller.may(use_case::PatchToken)?;
    let patch = json_patch_only(&req, &body)?;
    let id = path.into_inner();
    let token = call(&state, move |s| {
        s.tokens().patch_token(&permit, &id, &patch)
    })
    .await?;
    Ok(web::Json(TokenRep::new(token, None)))
}

/// Gives a token a new secret, shown in this response only. With `expiry` (epoch ms) the old
/// secret keeps working until then; otherwise it stops at once.
#[utoipa::path(
    tag = "Access tokens",
    params(
        ("id" = String, Path, description = "Token `_id`"),
        ("expiry" = Option<i64>, Query, description = "Until when the old secret stays valid (epoch ms); absent or past: it stops at once"),
    ),
    responses((status = 200, body = TokenRep), (status = 404, body = ErrorBody))
)]
#[post("/tokens/{id}/reset")]
pub async fn reset_token(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<web::Json<TokenRep>, ApiError> {
    let expiry = expiry_param(&req)?;
    let id = path.into_inner();
    let reset = call(&state, move |s| {
        s.tokens()
            .reset_token(&caller.may(use_case::ResetToken)?, &id, expiry)
    })
    .await?;
    Ok(web::Json(TokenRep::new(reset.token, Some(reset.secret))))
}
