//! `/api/v2/tokens`.

use actix_web::{delete, get, post, web, HttpRequest, HttpResponse};
use domain::query::Page;
use domain::role::Action;
use domain::token::TokenPost;

use crate::error::{ApiError, ErrorBody};
use crate::middleware::Auth;
use crate::wire::{call, json_body, page_links, permit, QueryParams, TokenRep, Tokens};
use crate::AppState;

/// Lists service tokens and the caller's personal tokens. Admin or owner.
#[utoipa::path(
    tag = "Access tokens",
    params(
        ("limit" = Option<u32>, Query, description = "1..100, default 25"),
        ("offset" = Option<u64>, Query, description = "Items to skip"),
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
    let page = Page::parse(params.get("limit"), params.get("offset"), 25)
        .map_err(|e| ApiError::invalid(e.0))?;
    let list = call(&state, move |s| s.list_tokens(&caller, page)).await?;
    Ok(web::Json(Tokens {
        links: page_links(&req, page.limit, page.offset, list.total),
        total_count: list.total,
        items: list
            .items
            .into_iter()
            .map(|t| TokenRep::new(t, None))
            .collect(),
    }))
}

/// Creates an access token; the response is the only time its secret is shown. Admin or owner.
#[utoipa::path(
    tag = "Access tokens",
    request_body = TokenPost,
    responses((status = 201, body = TokenRep))
)]
#[post("/tokens")]
pub async fn create_token(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    permit(&caller, Action::ManageTokens)?;
    let post: TokenPost = json_body(&req, &body)?;
    let created = call(&state, move |s| s.create_token(&caller, post)).await?;
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
    let token = call(&state, move |s| s.get_token(&caller, &id)).await?;
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
    call(&state, move |s| s.delete_token(&caller, &id)).await?;
    Ok(HttpResponse::NoContent().finish())
}
