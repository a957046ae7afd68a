//! `/api/v2/caller-identity`.

use actix_web::{get, web};
use serde::Serialize;

use crate::error::ApiError;
use crate::middleware::Auth;
use crate::wire::call;
use crate::AppState;

/// Who is calling. Fields that do not apply to the caller are left out: flagsvc callers are
/// always access tokens, so there is no `environmentId`, `projectId`, `clientId` or `scopes`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallerIdentityRep {
    /// The account's `_id` (24 hex).
    pub account_id: String,
    /// Always `token`: the caller presented an access token.
    pub auth_kind: String,
    /// `personal` or `service`.
    pub token_kind: String,
    /// The token's name.
    pub token_name: String,
    /// The token's `_id`.
    pub token_id: String,
    /// The member a personal token belongs to (left out for service tokens, which act for the
    /// account).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub member_id: Option<String>,
    /// Whether the token is a service token.
    pub service_token: bool,
}

/// Who is calling: the account, and the access token used.
#[utoipa::path(tag = "Other", responses((status = 200, body = CallerIdentityRep)))]
#[get("/caller-identity")]
pub async fn caller_identity(
    state: web::Data<AppState>,
    Auth(caller): Auth,
) -> Result<web::Json<CallerIdentityRep>, ApiError> {
    let account_id = call(&state, |s| s.account_id()).await?;
    Ok(web::Json(CallerIdentityRep {
        account_id,
        auth_kind: "token".to_owned(),
        token_kind: if caller.service_token() {
            "service"
        } else {
            "personal"
        }
        .to_owned(),
        token_name: caller.token_name().unwrap_or_default().to_owned(),
        token_id: caller
            .token_id()
            .map(ToString::to_string)
            .unwrap_or_default(),
        member_id: (!caller.service_token()).then(|| caller.member_id().to_string()),
        service_token: caller.service_token(),
    }))
}
