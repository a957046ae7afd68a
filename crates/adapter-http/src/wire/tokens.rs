//! Access tokens as the API shows them.

use super::hrefs::token_href;
use super::hrefs::TOKENS_HREF;
use crate::wire::link::{Link, Links};
use domain::token::Token;
use serde::Serialize;

/// An access token. `token` is the full secret only in the create response; otherwise its last
/// four characters.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenRep {
    /// 24 hex.
    #[serde(rename = "_id")]
    pub id: String,
    /// The member who owns it.
    pub owner_id: String,
    /// The member who created it.
    pub member_id: String,
    /// Creation time (epoch ms).
    pub creation_date: i64,
    /// Last change (epoch ms).
    pub last_modified: i64,
    /// `parent`, `self`.
    #[schema(value_type = crate::wire::link::LinksSchema)]
    #[serde(rename = "_links")]
    pub links: Links,
    /// Label.
    pub name: String,
    /// Free text.
    pub description: String,
    /// `reader`, `writer` or `admin` (`no_access` for a token acting with its custom roles or
    /// inline role alone).
    pub role: String,
    /// Custom roles (`_id`s) the token acts with besides its role.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub custom_role_ids: Vec<String>,
    /// Policy statements the token acts with besides its role.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inline_role: Vec<domain::policy::Statement>,
    /// Service token or personal.
    pub service_token: bool,
    /// Version used without `Svc-API-Version`.
    pub default_api_version: i32,
    /// The secret (create) or its last four characters.
    pub token: String,
    /// Last use (epoch ms); absent until the token is first used.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub last_used: Option<i64>,
}

impl TokenRep {
    /// The representation of `token`, showing `secret` when given (only on create).
    pub fn new(token: Token, secret: Option<String>) -> Self {
        let links = Links::from([
            ("parent".to_owned(), Link::api(TOKENS_HREF)),
            ("self".to_owned(), Link::api(token_href(&token.id))),
        ]);
        Self {
            owner_id: token.member_id.to_string(),
            member_id: token.member_id.into(),
            creation_date: token.creation_date,
            last_modified: token.last_modified,
            links,
            name: token.name,
            description: token.description,
            role: token.role.as_str().to_owned(),
            custom_role_ids: token
                .custom_role_ids
                .iter()
                .map(ToString::to_string)
                .collect(),
            inline_role: token.inline_role.clone(),
            service_token: token.service_token,
            default_api_version: token.default_api_version,
            token: secret.unwrap_or(token.ending),
            last_used: token.last_used,
            id: token.id.into(),
        }
    }
}

/// A page of tokens.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Tokens {
    /// The tokens.
    pub items: Vec<TokenRep>,
    /// All visible tokens.
    #[serde(rename = "totalCount")]
    pub total_count: u64,
    /// Paging links.
    #[schema(value_type = crate::wire::link::LinksSchema)]
    #[serde(rename = "_links")]
    pub links: Links,
}

crate::wire::page::collection_of!(Tokens, TokenRep);
