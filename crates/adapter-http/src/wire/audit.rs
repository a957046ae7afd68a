//! Audit entries as the API shows them: `AuditEntry` with the `_links` of the entry, its member,
//! its token and its target, and the page of entries.

use crate::wire::link::{Link, Links};
use domain::audit::{Access, ShownVersion};
use serde::Serialize;

use serde_json::Value;

use super::hrefs::member_href;
use super::hrefs::token_href;
use super::hrefs::{audit_entry_href, audit_log_href};

/// `{"self": href}`.
fn self_link(href: String) -> Links {
    Links::from([("self".to_owned(), Link::api(href))])
}

/// Who made a change: the member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditMember {
    /// Member `_id`.
    #[serde(rename = "_id")]
    pub id: String,
    /// Email.
    pub email: String,
    /// Given name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub first_name: Option<String>,
    /// Family name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub last_name: Option<String>,
    /// `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

/// Who made a change: the access token (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditToken {
    /// Token `_id`.
    #[serde(rename = "_id")]
    pub id: String,
    /// Token name.
    pub name: String,
    /// The secret's last four characters.
    pub ending: String,
    /// Whether it is a service token.
    pub service_token: bool,
    /// `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

/// What a change was made to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct AuditTarget {
    /// The resource's name (its key for most kinds).
    pub name: String,
    /// Its resource specifiers.
    pub resources: Vec<String>,
    /// Where it lives in the API (absent once deleted).
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

/// An audit log entry; the detail fields are only in the detail view.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: String,
    /// The account's `_id` (24 hex; one account per deployment).
    #[serde(rename = "_accountId", default)]
    #[schema(required = true)]
    pub account_id: String,
    /// `self`, `parent`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// When (epoch ms).
    pub date: i64,
    /// `flag`, `project`, `environment`, `segment`, `member`, `token`, `webhook`, `role` or `team`.
    pub kind: String,
    /// The changed resource's name.
    pub name: String,
    /// What happened, in a sentence (Markdown).
    pub description: String,
    /// What happened, in a few words.
    pub short_description: String,
    /// What was done, with the kind of resource: `created the flag`, `turned on the flag`.
    #[serde(default)]
    #[schema(required = true)]
    pub title_verb: String,
    /// Who did what to which resource, in a sentence (Markdown): ``[Ann](mailto:ann@example.com)
    /// turned on the flag [dark-mode](/api/v2/flags/web/dark-mode) in `production` ``.
    #[serde(default)]
    #[schema(required = true)]
    pub title: String,
    /// The comment sent with the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub comment: Option<String>,
    /// Every action, with its resource.
    pub accesses: Vec<Access>,
    /// The member who made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub member: Option<AuditMember>,
    /// The token used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub token: Option<AuditToken>,
    /// The changed resource.
    pub target: AuditTarget,
    /// Detail view: the JSON Patch, merge document or instructions sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Value>,
    /// Detail view: the resource before (secrets masked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub previous_version: Option<ShownVersion>,
    /// Detail view: the resource after (secrets masked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub current_version: Option<ShownVersion>,
}

impl From<domain::audit::AuditEntry> for AuditEntry {
    fn from(entry: domain::audit::AuditEntry) -> Self {
        Self {
            links: Links::from([
                ("self".to_owned(), Link::api(audit_entry_href(&entry.id))),
                ("parent".to_owned(), Link::api(audit_log_href())),
            ]),
            id: entry.id.into(),
            account_id: entry.account_id,
            date: entry.date,
            kind: entry.kind,
            name: entry.name,
            description: entry.description,
            short_description: entry.short_description,
            title_verb: entry.title_verb,
            title: entry.title,
            comment: entry.comment,
            accesses: entry.accesses,
            member: entry.member.map(|member| AuditMember {
                links: self_link(member_href(&member.id)),
                id: member.id,
                email: member.email,
                first_name: member.first_name,
                last_name: member.last_name,
            }),
            token: entry.token.map(|token| AuditToken {
                links: self_link(token_href(&token.id)),
                id: token.id,
                name: token.name,
                ending: token.ending,
                service_token: token.service_token,
            }),
            target: AuditTarget {
                name: entry.target.name,
                resources: entry.target.resources,
                // The address the resource had when the change was made, as recorded.
                links: entry.target.href.map(self_link).unwrap_or_default(),
            },
            delta: entry.delta,
            previous_version: entry.previous_version,
            current_version: entry.current_version,
        }
    }
}

/// A page of audit entries, newest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AuditEntries {
    /// The entries (listing view: no `delta`, `previousVersion`, `currentVersion`).
    pub items: Vec<AuditEntry>,
    /// `self`, and `next` (the entries before the last one) when the page is full.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}
