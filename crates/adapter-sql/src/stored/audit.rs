//! Audit entries: the listing fields (`audit_log.entry`) and the detail apart
//! (`audit_details.detail`), so that a listing never reads the detail.
//!
//! The API's `_links` of the entry, its member and its token are not part of an entry (the HTTP
//! adapter derives them from their ids). The target's address is recorded (`href`): it is what
//! the resource was called when the change was made, and a deleted resource has none.

use std::collections::BTreeMap;

use domain::audit::{Access, AuditEntry, AuditMember, AuditTarget, AuditToken, ShownVersion};
use domain::id::AuditEntryId;
use ports::StoreResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{read, versioned, write, Versioned, FORMAT_VERSION};

/// The listing fields of an audit entry, as `audit_log.entry` holds them. Accesses are
/// written with the domain's serde.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredAuditEntry {
    /// Format version (absent, so 0, in rows of earlier releases).
    #[serde(rename = "v", default)]
    pub format: u32,
    /// The entry's id.
    #[serde(rename = "_id")]
    pub id: String,
    /// The account's id (absent in the oldest entries).
    #[serde(rename = "_accountId", default)]
    pub account_id: String,
    /// When (epoch ms).
    #[serde(rename = "date")]
    pub date: i64,
    /// The kind of resource changed.
    #[serde(rename = "kind")]
    pub kind: String,
    /// The resource's name.
    #[serde(rename = "name")]
    pub name: String,
    /// What happened, in a sentence.
    #[serde(rename = "description")]
    pub description: String,
    /// What happened, in a few words.
    #[serde(rename = "shortDescription")]
    pub short_description: String,
    /// What was done, with the kind of resource (absent in the oldest entries).
    #[serde(rename = "titleVerb", default)]
    pub title_verb: String,
    /// Who did what, in a sentence (absent in the oldest entries).
    #[serde(rename = "title", default)]
    pub title: String,
    /// The comment sent with the change.
    #[serde(rename = "comment", default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Every action with its resource.
    #[serde(rename = "accesses")]
    pub accesses: Vec<Access>,
    /// The member who made the change.
    #[serde(rename = "member", default, skip_serializing_if = "Option::is_none")]
    pub member: Option<StoredAuditMember>,
    /// The token used.
    #[serde(rename = "token", default, skip_serializing_if = "Option::is_none")]
    pub token: Option<StoredAuditToken>,
    /// The changed resource.
    #[serde(rename = "target")]
    pub target: StoredAuditTarget,
    /// Version 0 only: entries written before the detail was stored apart carry it here.
    #[serde(rename = "delta", default, skip_serializing)]
    pub former_delta: Option<Value>,
    /// Version 0 only, as `former_delta`.
    #[serde(rename = "previousVersion", default, skip_serializing)]
    pub former_previous_version: Option<Value>,
    /// Version 0 only, as `former_delta`.
    #[serde(rename = "currentVersion", default, skip_serializing)]
    pub former_current_version: Option<Value>,
}

/// The member who made a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAuditMember {
    /// Member id.
    #[serde(rename = "_id")]
    pub id: String,
    /// Email.
    #[serde(rename = "email")]
    pub email: String,
    /// Given name.
    #[serde(rename = "firstName", default, skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
    /// Family name.
    #[serde(rename = "lastName", default, skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
}

/// The token a change was made with (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAuditToken {
    /// Token id.
    #[serde(rename = "_id")]
    pub id: String,
    /// Token name.
    #[serde(rename = "name")]
    pub name: String,
    /// The secret's last characters.
    #[serde(rename = "ending")]
    pub ending: String,
    /// A service token.
    #[serde(rename = "serviceToken")]
    pub service_token: bool,
}

/// What a change was made to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAuditTarget {
    /// The resource's name.
    #[serde(rename = "name")]
    pub name: String,
    /// Its resource specifiers.
    #[serde(rename = "resources")]
    pub resources: Vec<String>,
    /// Where the resource was in the API when the change was made (none once deleted).
    #[serde(rename = "href", default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    /// Version 0 only: the same as `_links.self`.
    #[serde(rename = "_links", default, skip_serializing)]
    pub former_links: Option<BTreeMap<String, FormerLink>>,
}

/// A link as version 0 stored it; only its path is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormerLink {
    /// The path.
    #[serde(rename = "href")]
    pub href: String,
}

/// An audit entry's detail, as `audit_details.detail` holds it: the request's delta and the
/// resource before and after, as the API showed them (opaque JSON, kept as they were).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredAuditDetail {
    /// Format version (absent, so 0, in rows of earlier releases).
    #[serde(rename = "v", default)]
    pub format: u32,
    /// The patch, merge document or instructions sent.
    #[serde(rename = "delta", default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Value>,
    /// The resource before.
    #[serde(
        rename = "previousVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub previous_version: Option<ShownVersion>,
    /// The resource after.
    #[serde(
        rename = "currentVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub current_version: Option<ShownVersion>,
}
versioned!(StoredAuditEntry, StoredAuditDetail);

/// [`StoredAuditDetail`] as it is written, borrowing the entry's values: the two versions of a
/// resource (up to 1 MiB each) are serialised where they are, not copied first.
#[derive(Serialize)]
struct StoredAuditDetailOut<'a> {
    #[serde(rename = "v")]
    format: u32,
    #[serde(rename = "delta", skip_serializing_if = "Option::is_none")]
    delta: Option<&'a Value>,
    #[serde(rename = "previousVersion", skip_serializing_if = "Option::is_none")]
    previous_version: Option<&'a ShownVersion>,
    #[serde(rename = "currentVersion", skip_serializing_if = "Option::is_none")]
    current_version: Option<&'a ShownVersion>,
}

impl From<&AuditEntry> for StoredAuditEntry {
    fn from(entry: &AuditEntry) -> Self {
        Self {
            format: FORMAT_VERSION,
            id: entry.id.to_string(),
            account_id: entry.account_id.clone(),
            date: entry.date,
            kind: entry.kind.clone(),
            name: entry.name.clone(),
            description: entry.description.clone(),
            short_description: entry.short_description.clone(),
            title_verb: entry.title_verb.clone(),
            title: entry.title.clone(),
            comment: entry.comment.clone(),
            accesses: entry.accesses.clone(),
            member: entry.member.as_ref().map(|m| StoredAuditMember {
                id: m.id.clone(),
                email: m.email.clone(),
                first_name: m.first_name.clone(),
                last_name: m.last_name.clone(),
            }),
            token: entry.token.as_ref().map(|t| StoredAuditToken {
                id: t.id.clone(),
                name: t.name.clone(),
                ending: t.ending.clone(),
                service_token: t.service_token,
            }),
            target: StoredAuditTarget {
                name: entry.target.name.clone(),
                resources: entry.target.resources.clone(),
                href: entry.target.href.clone(),
                former_links: None,
            },
            former_delta: None,
            former_previous_version: None,
            former_current_version: None,
        }
    }
}

/// The entry; the detail fields only for an entry of version 0 that carried them.
impl From<StoredAuditEntry> for AuditEntry {
    fn from(stored: StoredAuditEntry) -> Self {
        let target_href = stored.target.href.or_else(|| {
            stored
                .target
                .former_links
                .and_then(|mut links| links.remove("self"))
                .map(|link| link.href)
        });
        AuditEntry {
            id: AuditEntryId::from_stored(stored.id),
            account_id: stored.account_id,
            date: stored.date,
            kind: stored.kind,
            name: stored.name,
            description: stored.description,
            short_description: stored.short_description,
            title_verb: stored.title_verb,
            title: stored.title,
            comment: stored.comment,
            accesses: stored.accesses,
            member: stored.member.map(|m| AuditMember {
                id: m.id,
                email: m.email,
                first_name: m.first_name,
                last_name: m.last_name,
            }),
            token: stored.token.map(|t| AuditToken {
                id: t.id,
                name: t.name,
                ending: t.ending,
                service_token: t.service_token,
            }),
            target: AuditTarget {
                name: stored.target.name,
                resources: stored.target.resources,
                href: target_href,
            },
            delta: stored.former_delta,
            previous_version: stored.former_previous_version.map(ShownVersion::from),
            current_version: stored.former_current_version.map(ShownVersion::from),
        }
    }
}

/// The JSON of the listing fields of `entry` (without its detail).
pub fn listing_json(entry: &AuditEntry) -> StoreResult<String> {
    write(&StoredAuditEntry::from(entry))
}

/// The JSON of the detail of `entry`.
pub fn detail_json(entry: &AuditEntry) -> StoreResult<String> {
    write(&StoredAuditDetailOut {
        format: FORMAT_VERSION,
        delta: entry.delta.as_ref(),
        previous_version: entry.previous_version.as_ref(),
        current_version: entry.current_version.as_ref(),
    })
}

/// An entry from its listing JSON (with its detail only if it was written inside, as entries
/// of version 0 written before the detail was stored apart were).
pub fn read_listing(text: &str) -> StoreResult<AuditEntry> {
    read::<StoredAuditEntry>(text, "audit entry").map(AuditEntry::from)
}

/// Sets the detail fields of `entry` from the detail JSON.
pub fn read_detail(text: &str, entry: &mut AuditEntry) -> StoreResult<()> {
    let detail: StoredAuditDetail = read(text, "audit entry detail")?;
    entry.delta = detail.delta;
    entry.previous_version = detail.previous_version;
    entry.current_version = detail.current_version;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn full_entry() -> AuditEntry {
        AuditEntry {
            id: AuditEntryId::from_stored("0123456789abcdef01234567".into()),
            account_id: "a".repeat(24),
            date: 5,
            kind: "flag".into(),
            name: "f".into(),
            description: "ann@example.com updated flag `f`: updateOn".into(),
            short_description: "updated flag f".into(),
            title_verb: "turned on the flag".into(),
            title: "Ann turned on the flag [f](/api/v2/flags/p/f)".into(),
            comment: Some("why".into()),
            accesses: vec![Access {
                action: "updateOn".into(),
                resource: "proj/p:env/production:flag/f".into(),
            }],
            member: Some(AuditMember {
                id: "m1".into(),
                email: "ann@example.com".into(),
                first_name: Some("Ann".into()),
                last_name: Some("Lee".into()),
            }),
            token: Some(AuditToken {
                id: "t1".into(),
                name: "ci".into(),
                ending: "abcd".into(),
                service_token: true,
            }),
            target: AuditTarget {
                name: "f".into(),
                resources: vec!["proj/p:env/*:flag/f".into()],
                href: Some("/api/v2/flags/p/f".into()),
            },
            delta: Some(json!([{"op": "replace", "path": "/on", "value": true}])),
            previous_version: Some(json!({"on": false}).into()),
            current_version: Some(json!({"on": true}).into()),
        }
    }

    /// The stored format of [`full_entry`]: a change here is a change of the stored format.
    const LISTING: &str = r#"{"v":1,"_id":"0123456789abcdef01234567","_accountId":"aaaaaaaaaaaaaaaaaaaaaaaa","date":5,"kind":"flag","name":"f","description":"ann@example.com updated flag `f`: updateOn","shortDescription":"updated flag f","titleVerb":"turned on the flag","title":"Ann turned on the flag [f](/api/v2/flags/p/f)","comment":"why","accesses":[{"action":"updateOn","resource":"proj/p:env/production:flag/f"}],"member":{"_id":"m1","email":"ann@example.com","firstName":"Ann","lastName":"Lee"},"token":{"_id":"t1","name":"ci","ending":"abcd","serviceToken":true},"target":{"name":"f","resources":["proj/p:env/*:flag/f"],"href":"/api/v2/flags/p/f"}}"#;
    const DETAIL: &str = r#"{"v":1,"delta":[{"op":"replace","path":"/on","value":true}],"previousVersion":{"on":false},"currentVersion":{"on":true}}"#;

    #[test]
    fn the_stored_json_of_a_full_entry_is_pinned() {
        let entry = full_entry();
        assert_eq!(listing_json(&entry).unwrap(), LISTING);
        assert_eq!(detail_json(&entry).unwrap(), DETAIL);
        let mut read = read_listing(LISTING).unwrap();
        assert_eq!(read, entry.listing());
        read_detail(DETAIL, &mut read).unwrap();
        assert_eq!(read, entry);
    }

    #[test]
    fn the_format_of_earlier_releases_reads() {
        // Written by the release before the stored types: the API's JSON, links included, and
        // before the detail was stored apart, the detail inside.
        let old = r#"{"_id":"0123456789abcdef01234567","_accountId":"aaaaaaaaaaaaaaaaaaaaaaaa","_links":{"parent":{"href":"/api/v2/auditlog","type":"application/json"},"self":{"href":"/api/v2/auditlog/0123456789abcdef01234567","type":"application/json"}},"date":5,"kind":"flag","name":"f","description":"ann@example.com updated flag `f`: updateOn","shortDescription":"updated flag f","titleVerb":"turned on the flag","title":"Ann turned on the flag [f](/api/v2/flags/p/f)","comment":"why","accesses":[{"action":"updateOn","resource":"proj/p:env/production:flag/f"}],"member":{"_id":"m1","email":"ann@example.com","firstName":"Ann","lastName":"Lee","_links":{"self":{"href":"/api/v2/members/m1","type":"application/json"}}},"token":{"_id":"t1","name":"ci","ending":"abcd","serviceToken":true,"_links":{"self":{"href":"/api/v2/tokens/t1","type":"application/json"}}},"target":{"name":"f","resources":["proj/p:env/*:flag/f"],"_links":{"self":{"href":"/api/v2/flags/p/f","type":"application/json"}}},"delta":[{"op":"replace","path":"/on","value":true}],"previousVersion":{"on":false},"currentVersion":{"on":true}}"#;
        assert_eq!(read_listing(old).unwrap(), full_entry());
        let old_detail = r#"{"delta":[{"op":"replace","path":"/on","value":true}],"previousVersion":{"on":false},"currentVersion":{"on":true}}"#;
        let mut entry = full_entry().listing();
        read_detail(old_detail, &mut entry).unwrap();
        assert_eq!(entry, full_entry());
    }
}
