//! Webhooks: where audit entries are delivered, and which entries each one wants.

use serde::{Deserialize, Serialize};

use crate::audit::AuditEntry;
use crate::id::WebhookId;
use crate::patch::{self, PatchError};
use crate::{normalize_tags, validate_tags, FieldError, ValidationError};

/// The longest webhook URL, in characters.
///
/// ```
/// assert_eq!(domain::webhook::MAX_URL_CHARS, 2048);
/// ```
pub const MAX_URL_CHARS: usize = 2048;

pub mod target;

/// Webhook statements are policy statements: the same grammar as roles'.
pub use crate::policy::{Effect, Statement};

/// A webhook. How the API shows it (with its links) is the HTTP adapter's business; this JSON
/// (the serde names) is what JSON Patch paths address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Webhook {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: WebhookId,
    /// Where entries are POSTed (`http` or `https`; a public host unless the service allows
    /// private networks or lists the host).
    pub url: String,
    /// Whether deliveries are made.
    pub on: bool,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The HMAC-SHA256 key of `X-Svc-Signature`; deliveries are signed when it is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Which changes it wants; none = every change.
    pub statements: Vec<Statement>,
    /// Sorted, unique tags.
    pub tags: Vec<String>,
}

/// `POST /webhooks` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookPost {
    /// Where to POST (`http` or `https`; a public host unless the service allows private
    /// networks or lists the host; no `user@`).
    #[cfg_attr(feature = "openapi", schema(format = "uri"))]
    pub url: String,
    /// Sign deliveries (a secret is generated when none is given).
    pub sign: bool,
    /// Deliver.
    pub on: bool,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Signing key.
    #[serde(default)]
    pub secret: Option<String>,
    /// Which changes; none = every change.
    #[serde(default)]
    pub statements: Vec<Statement>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

impl Webhook {
    /// A new webhook; `generated_secret` is used when signing is asked for without a secret.
    ///
    /// # Errors
    /// [`ValidationError`] for a bad URL, statements or tags.
    pub fn create(
        id: WebhookId,
        post: WebhookPost,
        generated_secret: String,
    ) -> Result<Self, ValidationError> {
        let secret = match (post.sign, post.secret) {
            (true, None) => Some(generated_secret),
            (true, Some(secret)) => Some(secret),
            (false, secret) => secret,
        };
        let mut webhook = Self {
            id,
            url: post.url,
            on: post.on,
            name: post.name,
            secret,
            statements: post.statements,
            tags: post.tags,
        };
        webhook.validate()?;
        normalize_tags(&mut webhook.tags);
        Ok(webhook)
    }

    /// Checks the URL, statements and tags.
    ///
    /// # Errors
    /// [`ValidationError`] naming each problem.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let mut errors = Vec::new();
        if self.url.chars().count() > MAX_URL_CHARS {
            errors.push(FieldError::new(
                "url",
                format!("must be at most {MAX_URL_CHARS} characters"),
            ));
        } else if let Err(reason) = target::parse_url(&self.url) {
            errors.push(FieldError::new("url", reason));
        }
        if self.secret.as_deref().is_some_and(str::is_empty) {
            errors.push(FieldError::new("secret", "must not be empty"));
        }
        // A webhook's statements are decided on every change of the account: held to a role's
        // rules (and bounds).
        crate::custom_role::validate_policy("statements", &self.statements, &mut errors);
        let bytes = serde_json::to_vec(&self.statements).map_or(usize::MAX, |json| json.len());
        if bytes > crate::custom_role::MAX_ROLE_BYTES {
            errors.push(FieldError::new(
                "statements",
                format!(
                    "at most {} bytes of JSON, as a custom role's policy",
                    crate::custom_role::MAX_ROLE_BYTES
                ),
            ));
        }
        validate_tags("tags", &self.tags, &mut errors);
        if let Some(name) = &self.name {
            if name.chars().count() > 256 {
                errors.push(FieldError::new("name", "must be at most 256 characters"));
            }
            crate::validate_single_line("name", name, &mut errors);
        }
        ValidationError::check(errors)
    }

    /// Whether an audit entry is delivered here: the webhook is on, and it has no statements or
    /// one of the entry's accesses is allowed by a statement and denied by none.
    ///
    /// ```
    /// # use domain::webhook::{Webhook, WebhookPost};
    /// # let hook = Webhook::create(domain::id::WebhookId::parse(&"0".repeat(24)).unwrap(), WebhookPost { url: "http://x.io".into(), on: true, ..Default::default() }, "s".into()).unwrap();
    /// # let entry: domain::audit::AuditEntry = serde_json::from_value(serde_json::json!({
    /// #     "_id": "000000000000000000000001", "_links": {}, "date": 1, "kind": "flag", "name": "f", "description": "", "shortDescription": "",
    /// #     "accesses": [{"action": "updateOn", "resource": "proj/p:env/test:flag/f"}],
    /// #     "target": {"name": "f", "resources": [], "_links": {}}})).unwrap();
    /// assert!(hook.selects(&entry), "no statements: every change");
    /// ```
    pub fn selects(&self, entry: &AuditEntry) -> bool {
        if !self.on {
            return false;
        }
        if self.statements.is_empty() {
            return true;
        }
        entry.accesses.iter().any(|access| {
            let allowed = self
                .statements
                .iter()
                .any(|s| s.effect == Effect::Allow && s.matches(access));
            let denied = self
                .statements
                .iter()
                .any(|s| s.effect == Effect::Deny && s.matches(access));
            allowed && !denied
        })
    }

    /// Applies a JSON Patch: `/on`, `/url`, `/name`, `/secret`, `/tags`, `/statements`.
    ///
    /// # Errors
    /// [`PatchError`] for another path, a failed `test`, or an invalid result.
    pub fn apply_patch(&self, ops: &[patch::Operation]) -> Result<Webhook, PatchError> {
        self.apply_patch_as_shown(&serde_json::Value::Null, ops)
    }

    /// [`Webhook::apply_patch`] on this webhook as the API shows it: with the `_links` of `shown` (its
    /// representation; nothing else is taken from it), which the operations may `test` and
    /// `copy` from but not write.
    ///
    /// # Errors
    /// As [`Webhook::apply_patch`].
    pub fn apply_patch_as_shown(
        &self,
        shown: &serde_json::Value,
        ops: &[patch::Operation],
    ) -> Result<Webhook, PatchError> {
        let mut next: Webhook = patch::apply_to_fields_as_shown(
            self,
            shown,
            &patch::LINKS_ONLY,
            ops,
            &["on", "url", "name", "secret", "tags", "statements"],
        )?;
        next.validate()?;
        normalize_tags(&mut next.tags);
        Ok(next)
    }

    /// The webhook with its secret masked (for the audit log).
    pub fn masked(&self) -> Webhook {
        Webhook {
            secret: self.secret.as_deref().map(crate::audit::mask),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook_id() -> WebhookId {
        WebhookId::parse(&"0".repeat(24)).unwrap()
    }

    fn entry(accesses: &[(&str, &str)]) -> AuditEntry {
        serde_json::from_value(serde_json::json!({
            "_id": "000000000000000000000001", "_links": {}, "date": 1, "kind": "flag", "name": "f", "description": "", "shortDescription": "",
            "accesses": accesses.iter().map(|(a, r)| serde_json::json!({"action": a, "resource": r})).collect::<Vec<_>>(),
            "target": {"name": "f", "resources": [], "_links": {}}}))
        .unwrap()
    }

    fn hook(statements: serde_json::Value, on: bool) -> Webhook {
        let post = WebhookPost {
            url: "https://hooks.example.com/x".into(),
            on,
            statements: serde_json::from_value(statements).unwrap(),
            ..Default::default()
        };
        Webhook::create(hook_id(), post, "generated".into()).unwrap()
    }

    #[test]
    fn statements_select_entries() {
        let production = entry(&[("updateOn", "proj/web:env/production:flag/f")]);
        let test = entry(&[("updateOn", "proj/web:env/test:flag/f")]);
        let all = hook(serde_json::json!([]), true);
        assert!(all.selects(&production) && all.selects(&test));
        assert!(
            !hook(serde_json::json!([]), false).selects(&production),
            "off: nothing"
        );
        let prod_only = hook(
            serde_json::json!([{"effect": "allow", "resources": ["proj/*:env/production:flag/*"]}]),
            true,
        );
        assert!(prod_only.selects(&production) && !prod_only.selects(&test));
        let no_on = hook(
            serde_json::json!([{"effect": "allow", "resources": ["proj/*:env/*:flag/*"]}, {"effect": "deny", "resources": ["proj/*:env/*:flag/*"], "actions": ["updateOn"]}]),
            true,
        );
        assert!(!no_on.selects(&production));
        let not_test = hook(
            serde_json::json!([{"effect": "allow", "notResources": ["proj/*:env/test:flag/*"]}]),
            true,
        );
        assert!(not_test.selects(&production));
    }

    #[test]
    fn creation_rules() {
        let signed = Webhook::create(
            hook_id(),
            WebhookPost {
                url: "http://x.io".into(),
                sign: true,
                ..Default::default()
            },
            "gen".into(),
        )
        .unwrap();
        assert_eq!(signed.secret.as_deref(), Some("gen"));
        let unsigned = Webhook::create(
            hook_id(),
            WebhookPost {
                url: "http://x.io".into(),
                ..Default::default()
            },
            "gen".into(),
        )
        .unwrap();
        assert_eq!(unsigned.secret, None);
        assert!(Webhook::create(
            hook_id(),
            WebhookPost {
                url: "file:///etc".into(),
                ..Default::default()
            },
            "g".into()
        )
        .is_err());
        let both =
            serde_json::json!([{"effect": "allow", "resources": ["a"], "notResources": ["b"]}]);
        let post = WebhookPost {
            url: "http://x.io".into(),
            statements: serde_json::from_value(both).unwrap(),
            ..Default::default()
        };
        assert!(Webhook::create(hook_id(), post, "g".into()).is_err());
        assert_eq!(signed.masked().secret.as_deref(), Some("****"));
    }
}

/// One attempt to deliver an audit entry to a webhook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    /// The delivery (one per entry and webhook).
    pub delivery_id: String,
    /// The audit entry delivered.
    pub entry_id: String,
    /// 1 for the first try.
    pub attempt: u32,
    /// When it was made (epoch ms).
    pub date: i64,
    /// The receiver's HTTP status, if it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub status_code: Option<u16>,
    /// What went wrong, if the receiver did not answer with 2xx.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub error: Option<String>,
    /// How long it took (ms).
    pub duration_ms: i64,
}

/// When a failed delivery is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Delay before the second attempt (ms); it doubles with each further attempt.
    pub base_delay_ms: i64,
    /// The longest delay (ms).
    pub max_delay_ms: i64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay_ms: 1_000,
            max_delay_ms: 300_000,
        }
    }
}

impl RetryPolicy {
    /// The delay after failed attempt `attempt` (1-based), or `None` when it was the last.
    /// `jitter` in `0.0..=1.0` spreads retries: the delay is scaled into 50%..100%.
    ///
    /// ```
    /// use domain::webhook::RetryPolicy;
    /// let policy = RetryPolicy { max_attempts: 3, base_delay_ms: 1000, max_delay_ms: 10_000 };
    /// assert_eq!(policy.delay_after(1, 1.0), Some(1000));
    /// assert_eq!(policy.delay_after(2, 1.0), Some(2000));
    /// assert_eq!(policy.delay_after(2, 0.0), Some(1000));
    /// assert_eq!(policy.delay_after(3, 1.0), None);
    /// ```
    pub fn delay_after(&self, attempt: u32, jitter: f64) -> Option<i64> {
        if attempt >= self.max_attempts {
            return None;
        }
        let exponential = self
            .base_delay_ms
            .saturating_mul(1_i64 << attempt.saturating_sub(1).min(30));
        let capped = exponential.min(self.max_delay_ms);
        let factor = 0.5 + 0.5 * jitter.clamp(0.0, 1.0);
        // Rounding a bounded, positive product: the cast cannot overflow.
        #[allow(clippy::cast_possible_truncation)]
        Some(((capped as f64) * factor).round() as i64)
    }
}
