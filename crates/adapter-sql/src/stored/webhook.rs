//! Webhooks (`webhooks.doc`).

use domain::id::WebhookId;
use domain::webhook::{Statement, Webhook};
use ports::StoreResult;
use serde::{Deserialize, Serialize};

use super::{read, versioned, write, Versioned, FORMAT_VERSION};

/// A webhook as `webhooks.doc` holds it. Statements are written with the domain's serde.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredWebhook {
    /// Format version (absent, so 0, in rows of earlier releases).
    #[serde(rename = "v", default)]
    pub format: u32,
    /// The webhook's id.
    #[serde(rename = "_id")]
    pub id: String,
    /// Where deliveries go.
    #[serde(rename = "url")]
    pub url: String,
    /// Deliveries are made.
    #[serde(rename = "on")]
    pub on: bool,
    /// Display name.
    #[serde(rename = "name", default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The signing key.
    #[serde(rename = "secret", default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Which changes it wants.
    #[serde(rename = "statements")]
    pub statements: Vec<Statement>,
    /// Tags.
    #[serde(rename = "tags")]
    pub tags: Vec<String>,
}
versioned!(StoredWebhook);

impl From<&Webhook> for StoredWebhook {
    fn from(webhook: &Webhook) -> Self {
        Self {
            format: FORMAT_VERSION,
            id: webhook.id.to_string(),
            url: webhook.url.clone(),
            on: webhook.on,
            name: webhook.name.clone(),
            secret: webhook.secret.clone(),
            statements: webhook.statements.clone(),
            tags: webhook.tags.clone(),
        }
    }
}

impl From<StoredWebhook> for Webhook {
    fn from(stored: StoredWebhook) -> Self {
        Webhook {
            id: WebhookId::from_stored(stored.id),
            url: stored.url,
            on: stored.on,
            name: stored.name,
            secret: stored.secret,
            statements: stored.statements,
            tags: stored.tags,
        }
    }
}

/// The JSON of `webhook`.
pub fn doc_json(webhook: &Webhook) -> StoreResult<String> {
    write(&StoredWebhook::from(webhook))
}

/// A webhook from its JSON.
pub fn read_doc(text: &str) -> StoreResult<Webhook> {
    read::<StoredWebhook>(text, "webhook").map(Webhook::from)
}

#[cfg(test)]
mod tests {
    use domain::webhook::Effect;

    use super::*;

    fn full_webhook() -> Webhook {
        Webhook {
            id: WebhookId::from_stored("0123456789abcdef01234567".into()),
            url: "https://example.com/hook".into(),
            on: true,
            name: Some("Hook".into()),
            secret: Some("s3cret".into()),
            statements: vec![
                Statement {
                    effect: Effect::Allow,
                    resources: Some(vec!["proj/*:env/production:flag/*".into()]),
                    not_resources: None,
                    actions: Some(vec!["update*".into()]),
                    not_actions: None,
                },
                Statement {
                    effect: Effect::Deny,
                    resources: None,
                    not_resources: Some(vec!["proj/*".into()]),
                    actions: None,
                    not_actions: Some(vec!["delete*".into()]),
                },
            ],
            tags: vec!["ops".into()],
        }
    }

    /// The stored format of [`full_webhook`]: a change here is a change of the stored format.
    const DOC: &str = r#"{"v":1,"_id":"0123456789abcdef01234567","url":"https://example.com/hook","on":true,"name":"Hook","secret":"s3cret","statements":[{"effect":"allow","resources":["proj/*:env/production:flag/*"],"actions":["update*"]},{"effect":"deny","notResources":["proj/*"],"notActions":["delete*"]}],"tags":["ops"]}"#;

    #[test]
    fn the_stored_json_of_a_full_webhook_is_pinned() {
        assert_eq!(doc_json(&full_webhook()).unwrap(), DOC);
        assert_eq!(read_doc(DOC).unwrap(), full_webhook());
    }

    #[test]
    fn the_format_of_earlier_releases_reads() {
        // Written by the release before the stored types: the API's JSON, links included.
        let old = r#"{"_id":"0123456789abcdef01234567","_links":{"parent":{"href":"/api/v2/webhooks","type":"application/json"},"self":{"href":"/old/place","type":"application/json"}},"url":"https://example.com/hook","on":true,"name":"Hook","secret":"s3cret","statements":[{"effect":"allow","resources":["proj/*:env/production:flag/*"],"actions":["update*"]},{"effect":"deny","notResources":["proj/*"],"notActions":["delete*"]}],"tags":["ops"]}"#;
        assert_eq!(read_doc(old).unwrap(), full_webhook());
    }
}
