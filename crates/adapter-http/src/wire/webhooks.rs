//! Webhooks as the API shows them: `Webhook` with its `_links`, and the collection.

use crate::wire::link::{Link, Links};
use domain::webhook::Statement;
use serde::Serialize;

use super::hrefs::webhook_href;
use super::hrefs::WEBHOOKS_HREF;

/// A webhook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
// `deny_unknown_fields` only for the schema (`additionalProperties: false`), as it always was.
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Webhook {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: String,
    /// `self`, `parent`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// Where entries are POSTed (`http` or `https`; a public host unless the service allows
    /// private networks or lists the host).
    #[schema(format = "uri")]
    pub url: String,
    /// Whether deliveries are made.
    pub on: bool,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub name: Option<String>,
    /// The HMAC-SHA256 key of `X-Svc-Signature`; deliveries are signed when it is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub secret: Option<String>,
    /// Which changes it wants; none = every change.
    pub statements: Vec<Statement>,
    /// Sorted, unique tags.
    #[schema(max_items = 100)]
    pub tags: Vec<String>,
}

impl From<&domain::webhook::Webhook> for Webhook {
    fn from(webhook: &domain::webhook::Webhook) -> Self {
        Self {
            id: webhook.id.to_string(),
            links: Links::from([
                ("self".to_owned(), Link::api(webhook_href(&webhook.id))),
                ("parent".to_owned(), Link::api(WEBHOOKS_HREF)),
            ]),
            url: webhook.url.clone(),
            on: webhook.on,
            name: webhook.name.clone(),
            secret: webhook.secret.clone(),
            statements: webhook.statements.clone(),
            tags: webhook.tags.clone(),
        }
    }
}

impl From<domain::webhook::Webhook> for Webhook {
    fn from(webhook: domain::webhook::Webhook) -> Self {
        Self::from(&webhook)
    }
}

/// The webhooks (not paged).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Webhooks {
    /// Every webhook.
    pub items: Vec<Webhook>,
    /// `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

impl Webhooks {
    /// How the API shows the list of `webhooks` from the one at `from`: at most
    /// [`super::MAX_PAGE_BYTES`] of them, with a `next` link when more follow.
    pub fn page(webhooks: &[domain::webhook::Webhook], from: usize) -> Self {
        let mut items: Vec<Webhook> = webhooks[from..].iter().map(Webhook::from).collect();
        super::within_page_bytes(&mut items);
        let href = |offset: usize| match offset {
            0 => WEBHOOKS_HREF.to_owned(),
            _ => format!("{WEBHOOKS_HREF}?offset={offset}"),
        };
        let mut links = Links::from([("self".to_owned(), Link::api(href(from)))]);
        let after = from + items.len();
        if after < webhooks.len() {
            links.insert("next".to_owned(), Link::api(href(after)));
        }
        Self { items, links }
    }
}
