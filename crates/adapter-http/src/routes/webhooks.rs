//! `/api/v2/webhooks`.

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use domain::webhook::{DeliveryAttempt, WebhookPost};
use serde::Serialize;

use crate::error::{ApiError, ErrorBody};
use crate::middleware::Auth;
use crate::wire::model;
use crate::wire::{access, with_access};
use crate::wire::{
    call, json_body, json_patch_only, JsonPatchOperation, QueryParams, Webhook, Webhooks,
};
use crate::AppState;
use serde_json::Value;
use service::use_case;

/// A webhook's recent delivery attempts.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Deliveries {
    /// Newest first, at most 50.
    #[schema(value_type = Vec<model::DeliveryAttempt>)]
    pub items: Vec<DeliveryAttempt>,
}

/// What a receiver gets: a POST whose body is an audit entry (listing view, as in
/// `GET /auditlog`), with `X-Svc-Signature: <hex HMAC-SHA256 of the body under the secret>` when
/// the webhook has a secret, and `X-Svc-Delivery: <delivery id>` (the same on every retry).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookDeliveryPayload(pub crate::wire::AuditEntry);

/// Lists the webhooks, oldest first. Admin or owner. An answer holds at most 4 MiB of
/// webhooks; when more follow, its `next` link names the `offset` they start at.
#[utoipa::path(
    tag = "Webhooks",
    params(("offset" = Option<u64>, Query, description = "Skip this many webhooks (what a `next` link carries); default 0")),
    responses((status = 200, body = Webhooks), (status = 400, body = ErrorBody))
)]
#[get("/webhooks")]
pub async fn list_webhooks(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
) -> Result<web::Json<Webhooks>, ApiError> {
    let offset = domain::query::Page::parse(None, QueryParams::of(&req).get("offset"), 1)?.offset;
    let webhooks = call(&state, move |s| {
        s.webhooks()
            .list_webhooks(&caller.may(use_case::ListWebhooks)?)
    })
    .await?;
    let from = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(webhooks.len());
    Ok(web::Json(Webhooks::page(&webhooks, from)))
}

/// Creates a webhook (200, not 201). With `sign` and no `secret`, a secret is generated. Every
/// audit entry its `statements` select (all, without statements) is POSTed to `url` (see
/// `WebhookDeliveryPayload`), retried with backoff on failure. Admin or owner.
#[utoipa::path(
    tag = "Webhooks",
    request_body = model::WebhookPost,
    responses((status = 200, body = Webhook))
)]
#[post("/webhooks")]
pub async fn create_webhook(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<Value>, ApiError> {
    let permit = caller.may(use_case::CreateWebhook)?;
    let post: WebhookPost = json_body(&req, &body)?;
    let webhook = call(&state, move |s| s.webhooks().create_webhook(&permit, post)).await?;
    let access = access::to_webhook(&caller, &webhook);
    Ok(web::Json(with_access(&Webhook::from(webhook), &access)?))
}

/// One webhook.
#[utoipa::path(
    tag = "Webhooks",
    params(("id" = String, Path, description = "Webhook `_id`")),
    responses((status = 200, body = Webhook), (status = 404, body = ErrorBody))
)]
#[get("/webhooks/{id}")]
pub async fn get_webhook(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<web::Json<Value>, ApiError> {
    let id = path.into_inner();
    let asking = caller.clone();
    let webhook = call(&state, move |s| {
        s.webhooks()
            .get_webhook(&asking.may(use_case::GetWebhook)?, &id)
    })
    .await?;
    let access = access::to_webhook(&caller, &webhook);
    Ok(web::Json(with_access(&Webhook::from(webhook), &access)?))
}

/// Changes a webhook by JSON Patch: `/on`, `/url`, `/name`, `/secret`, `/tags`, `/statements`.
#[utoipa::path(
    tag = "Webhooks",
    params(("id" = String, Path, description = "Webhook `_id`")),
    request_body(content = Vec<JsonPatchOperation>, description = "JSON Patch operations, or `{comment, patch}`", content_type = "application/json"),
    responses(
        (status = 200, body = Webhook),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A `test` operation failed", body = ErrorBody),
        (status = 422, description = "Another path or an invalid value", body = ErrorBody),
    )
)]
#[patch("/webhooks/{id}")]
pub async fn patch_webhook(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<web::Json<Value>, ApiError> {
    let permit = caller.may(use_case::PatchWebhook)?;
    let patch = json_patch_only(&req, &body)?;
    let id = path.into_inner();
    let webhook = call(&state, move |s| {
        s.webhooks().patch_webhook(&permit, &id, &patch)
    })
    .await?;
    let access = access::to_webhook(&caller, &webhook);
    Ok(web::Json(with_access(&Webhook::from(webhook), &access)?))
}

/// Deletes a webhook; its pending deliveries are dropped.
#[utoipa::path(
    tag = "Webhooks",
    params(("id" = String, Path, description = "Webhook `_id`")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody))
)]
#[delete("/webhooks/{id}")]
pub async fn delete_webhook(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path.into_inner();
    call(&state, move |s| {
        s.webhooks()
            .delete_webhook(&caller.may(use_case::DeleteWebhook)?, &id)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Recent delivery attempts: time, status code or error, duration, attempt number.
#[utoipa::path(
    tag = "Webhooks",
    params(("id" = String, Path, description = "Webhook `_id`")),
    responses((status = 200, body = Deliveries), (status = 404, body = ErrorBody))
)]
#[get("/webhooks/{id}/deliveries")]
pub async fn webhook_deliveries(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<web::Json<Deliveries>, ApiError> {
    let id = path.into_inner();
    Ok(web::Json(Deliveries {
        items: call(&state, move |s| {
            s.webhooks()
                .webhook_deliveries(&caller.may(use_case::GetWebhook)?, &id)
        })
        .await?,
    }))
}
