//! The audit log: one entry per change, saying who changed what, with resource specifiers
//! (`proj/web:env/production:flag/dark-mode`) and actions (`updateOn`) that filters and webhook
//! statements select with `*` globs.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::flag::{Flag, FlagConfig};
use crate::id::AuditEntryId;
use crate::policy::{Request, Resource};

// Where they have always been named: an audit entry records accesses, and selects by globs.
pub use crate::policy::{glob, Access};

mod listing;
pub use listing::{
    before_cursor, read_window, AuditPage, AuditQuery, AuditWindow, MAX_AUDIT_ENTRIES_READ,
};

/// Who made a change: the member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditMember {
    /// Member `_id`.
    #[serde(rename = "_id")]
    pub id: String,
    /// Email.
    pub email: String,
    /// Given name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
    /// Family name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
}

/// Who made a change: the access token (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// What a change was made to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditTarget {
    /// The resource's name (its key for most kinds).
    pub name: String,
    /// Its resource specifiers.
    pub resources: Vec<String>,
    /// Where it lived in the API when the change was made (its path), if it had an address:
    /// a record, not derived, so it stays as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
}

/// An audit log entry; the detail fields are only in the detail view.
///
/// Its serde representation is for tests and tools; the store keeps its own format and the
/// HTTP adapter its own wire shape (with the `_links` of the entry, its member, token and target).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: AuditEntryId,
    /// The account's `_id` (24 hex; one account per deployment).
    #[serde(rename = "_accountId", default)]
    pub account_id: String,
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
    pub title_verb: String,
    /// Who did what to which resource, in a sentence (Markdown), with a link to the resource
    /// (see [`AuditEntry::set_titles`]).
    #[serde(default)]
    pub title: String,
    /// The comment sent with the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Every action, with its resource.
    pub accesses: Vec<Access>,
    /// The member who made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<AuditMember>,
    /// The token used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<AuditToken>,
    /// The changed resource.
    pub target: AuditTarget,
    /// Detail view: the JSON Patch, merge document or instructions sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Value>,
    /// Detail view: the resource before (secrets masked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_version: Option<ShownVersion>,
    /// Detail view: the resource after (secrets masked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_version: Option<ShownVersion>,
}

/// A version of a resource as the API showed it, as JSON text (an audit entry's
/// `previousVersion` or `currentVersion`).
///
/// It is rendered once, when the change is made, and then stored and answered as it is: a
/// record is never edited, so it is never parsed into a tree on its way (a flag's versions are
/// most of a change's audit entry, up to 1 MiB each). Two versions are equal when their texts
/// are.
///
/// ```
/// # use domain::audit::ShownVersion;
/// let shown = ShownVersion::of(&serde_json::json!({"key": "f", "on": true}));
/// assert_eq!(shown.text(), r#"{"key":"f","on":true}"#);
/// assert_eq!(shown.to_value()["on"], true);
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ShownVersion(Box<RawValue>);

impl ShownVersion {
    /// `shown` serialised (a value whose serialisation fails, such as a map with keys that are
    /// not strings, is recorded as `null`: the API's shapes have none).
    pub fn of<T: Serialize + ?Sized>(shown: &T) -> ShownVersion {
        // `Box<RawValue>`'s default is `null`.
        ShownVersion(serde_json::value::to_raw_value(shown).unwrap_or_default())
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// Parsed into a tree (for tools and tests; `null` if the text were not JSON, which
    /// construction prevents).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }
}

impl PartialEq for ShownVersion {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl From<Value> for ShownVersion {
    fn from(value: Value) -> Self {
        ShownVersion::of(&value)
    }
}

impl AuditEntry {
    /// The listing view: the entry without `delta`, `previousVersion` and `currentVersion`
    /// (which are not copied).
    ///
    /// ```
    /// # use domain::audit::{AuditEntry, AuditTarget};
    /// let entry = AuditEntry {
    ///     id: domain::id::AuditEntryId::parse("000000000000000000000001").unwrap(), account_id: "a".into(), date: 1,
    ///     kind: "flag".into(), name: "f".into(), description: "d".into(),
    ///     short_description: "s".into(), title_verb: "t".into(), title: "t".into(),
    ///     comment: None, accesses: vec![], member: None, token: None,
    ///     target: AuditTarget { name: "f".into(), resources: vec![], href: None },
    ///     delta: None, previous_version: None, current_version: Some(serde_json::json!({"key": "f"}).into()),
    /// };
    /// let listing = entry.listing();
    /// assert_eq!(listing.current_version, None);
    /// assert_eq!(listing.name, "f");
    /// ```
    pub fn listing(&self) -> AuditEntry {
        AuditEntry {
            id: self.id.clone(),
            account_id: self.account_id.clone(),
            date: self.date,
            kind: self.kind.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            short_description: self.short_description.clone(),
            title_verb: self.title_verb.clone(),
            title: self.title.clone(),
            comment: self.comment.clone(),
            accesses: self.accesses.clone(),
            member: self.member.clone(),
            token: self.token.clone(),
            target: self.target.clone(),
            delta: None,
            previous_version: None,
            current_version: None,
        }
    }
}

impl AuditEntry {
    /// Sets `titleVerb` (`{verb} the {kind}`) and `title` (who, `titleVerb`, the resource as a
    /// Markdown link to it, and for a flag changed in one environment, which one) of a change
    /// described by `verb` (`created`, `updated`, `turned on`, ...).
    ///
    /// ```
    /// # use domain::audit::{Access, AuditEntry, AuditMember, AuditTarget};
    /// let mut entry = AuditEntry {
    ///     id: domain::id::AuditEntryId::parse("000000000000000000000001").unwrap(), account_id: "a".into(), date: 1,
    ///     kind: "flag".into(), name: "dark-mode".into(), description: String::new(),
    ///     short_description: "turned on flag dark-mode".into(), title_verb: String::new(),
    ///     title: String::new(), comment: None,
    ///     accesses: vec![Access { action: "updateOn".into(), resource: "proj/web:env/production:flag/dark-mode".into() }],
    ///     member: Some(AuditMember { id: "m".into(), email: "ann@example.com".into(),
    ///         first_name: Some("Ann".into()), last_name: None }),
    ///     token: None,
    ///     target: AuditTarget { name: "dark-mode".into(), resources: vec![],
    ///         href: Some("/flags/web/dark-mode".into()) },
    ///     delta: None, previous_version: None, current_version: None,
    /// };
    /// entry.set_titles("turned on");
    /// assert_eq!(entry.title_verb, "turned on the flag");
    /// assert_eq!(entry.title, "[Ann](mailto:ann@example.com) turned on the flag [dark-mode](/flags/web/dark-mode) in `production`");
    /// ```
    pub fn set_titles(&mut self, verb: &str) {
        self.title_verb = format!("{verb} the {}", self.kind);
        let actor = match (&self.member, &self.token) {
            // A service token acts for the account, not as the member who created it.
            (_, Some(token)) if token.service_token => {
                format!("the service token {}", markdown_text(&token.name))
            }
            (Some(member), _) => {
                let name = [member.first_name.as_deref(), member.last_name.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" ");
                let shown = if name.trim().is_empty() {
                    &member.email
                } else {
                    &name
                };
                format!(
                    "[{}](mailto:{})",
                    markdown_text(shown),
                    link_target(&member.email)
                )
            }
            (None, Some(token)) => format!("the access token {}", markdown_text(&token.name)),
            (None, None) => "someone".to_owned(),
        };
        let target = match &self.target.href {
            Some(href) => format!("[{}]({href})", markdown_text(&self.target.name)),
            None => markdown_text(&self.target.name),
        };
        let mut title = format!("{actor} {} {target}", self.title_verb);
        if self.kind == "flag" {
            if let Some(environment) = single_environment(&self.accesses) {
                title.push_str(&format!(" in `{environment}`"));
            }
        }
        self.title = title;
    }

    /// The entry as shown to a reader who may not see the member who made the change: no
    /// `member` (its email and name), and a description and titles that name the token instead.
    ///
    /// ```
    /// # use domain::audit::*;
    /// # let mut entry: AuditEntry = serde_json::from_value(serde_json::json!({"_accountId": "", "_id": "0".repeat(24), "date": 1, "kind": "flag", "name": "f", "description": "", "shortDescription": "", "accesses": [], "target": {"name": "f", "resources": []}, "member": {"_id": "m", "email": "ann@x.io"}})).unwrap();
    /// entry.set_titles("updated");
    /// assert!(entry.title.contains("ann@x.io"));
    /// entry.description = "ann@x.io updated flag `f`".into();
    /// entry.hide_member();
    /// assert!(entry.member.is_none() && !entry.title.contains("ann@x.io"));
    /// assert_eq!(entry.description, "someone updated flag `f`");
    /// assert_eq!(entry.title_verb, "updated the flag");
    /// ```
    pub fn hide_member(&mut self) {
        if let Some(member) = self.member.take() {
            let actor = match &self.token {
                Some(token) if token.service_token => format!("the service token {}", token.name),
                Some(token) => format!("the access token {}", token.name),
                None => "someone".to_owned(),
            };
            if let Some(rest) = self.description.strip_prefix(&format!("{} ", member.email)) {
                self.description = format!("{actor} {rest}");
            }
            let verb = self
                .title_verb
                .strip_suffix(&format!(" the {}", self.kind))
                .unwrap_or("changed")
                .to_owned();
            self.set_titles(&verb);
        }
    }

    /// Leaves the maintaining member (`_maintainer`) out of the resource versions it records
    /// where `hidden` says the reader may not see that member (by `_id`).
    pub fn hide_maintainers(&mut self, hidden: impl Fn(&str) -> bool) {
        for version in [&mut self.previous_version, &mut self.current_version]
            .into_iter()
            .flatten()
        {
            if !version.text().contains("\"_maintainer\"") {
                continue;
            }
            let mut value = version.to_value();
            let Some(object) = value.as_object_mut() else {
                continue;
            };
            let id = object
                .get("_maintainer")
                .and_then(|m| m.get("_id"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            if id.is_some_and(|id| hidden(&id)) {
                object.remove("_maintainer");
                *version = ShownVersion::of(&value);
            }
        }
    }

    /// Fills `titleVerb` and `title` of an entry stored before they existed, taking the verb
    /// from its short description (`{verb} {kind} {name}`).
    ///
    /// ```
    /// # use domain::audit::{AuditEntry, AuditTarget};
    /// # let mut entry = AuditEntry {
    /// #     id: domain::id::AuditEntryId::parse("000000000000000000000001").unwrap(), account_id: "a".into(), date: 1,
    /// #     kind: "project".into(), name: "web".into(), description: String::new(),
    /// #     short_description: "created project web".into(), title_verb: String::new(),
    /// #     title: String::new(), comment: None, accesses: vec![], member: None, token: None,
    /// #     target: AuditTarget { name: "web".into(), resources: vec![], href: None },
    /// #     delta: None, previous_version: None, current_version: None,
    /// # };
    /// entry.fill_titles();
    /// assert_eq!(entry.title_verb, "created the project");
    /// assert_eq!(entry.title, "someone created the project web");
    /// ```
    pub fn fill_titles(&mut self) {
        if self.title_verb.is_empty() || self.title.is_empty() {
            let suffix = format!(" {} {}", self.kind, self.name);
            let verb = self
                .short_description
                .strip_suffix(&suffix)
                .filter(|verb| !verb.is_empty())
                .unwrap_or("changed")
                .to_owned();
            self.set_titles(&verb);
        }
    }
}

/// The one environment every access is in (`proj/p:env/{e}:...`), if there is one.
fn single_environment(accesses: &[Access]) -> Option<&str> {
    let mut found: Option<&str> = None;
    for access in accesses {
        let environment = access
            .resource
            .split(':')
            .find_map(|part| part.strip_prefix("env/"))?;
        if environment == "*" || found.is_some_and(|f| f != environment) {
            return None;
        }
        found = Some(environment);
    }
    found
}

/// `text` with Markdown's special characters escaped.
fn markdown_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '<' | '>' | '#' | '!'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether resource specifier `resource` matches `pattern`, where `*` in a pattern matches any
/// run of characters within one `:`-separated part.
///
/// ```
/// use domain::audit::specifier_matches;
/// assert!(specifier_matches("proj/*:env/production:flag/*", "proj/web:env/production:flag/dark-mode"));
/// assert!(!specifier_matches("proj/*:env/test:flag/*", "proj/web:env/production:flag/dark-mode"));
/// assert!(!specifier_matches("proj/*", "proj/web:env/production"), "parts must line up");
/// assert!(specifier_matches("member/*", "member/0123"));
/// ```
pub fn specifier_matches(pattern: &str, resource: &str) -> bool {
    let patterns: Vec<&str> = pattern.split(':').collect();
    let parts: Vec<&str> = resource.split(':').collect();
    patterns.len() == parts.len() && patterns.iter().zip(&parts).all(|(p, r)| glob(p, r))
}

/// The audit accesses of `requests`: each action on each resource once, in order (a request
/// asked for a resource both as it was and as it becomes is recorded once).
///
/// ```
/// use domain::audit::accesses_of;
/// use domain::policy::{Request, Resource};
/// let flag = Resource::project("web").environment("test").flag("f");
/// let both = [
///     Request::new("updateTags", flag.clone().with_tags(&["old".into()])),
///     Request::new("updateTags", flag.with_tags(&["new".into()])),
/// ];
/// assert_eq!(accesses_of(&both).len(), 1);
/// ```
pub fn accesses_of(requests: &[Request]) -> Vec<Access> {
    let mut accesses: Vec<Access> = Vec::with_capacity(requests.len());
    for request in requests {
        let access = request.to_access();
        if !accesses.contains(&access) {
            accesses.push(access);
        }
    }
    accesses
}

/// The actions a change from `previous` to `next` of a flag in `project` asks for: each on the
/// flag as it is (carrying its tags) and, when the change retags it, as it becomes, so that a
/// statement limited to tagged flags (`flag/*;beta`) neither reaches an untagged flag by tagging
/// it nor keeps a flag it untags. Flag-wide changes are on `env/*`.
///
/// ```
/// # use domain::flag::{Flag, NewFlag};
/// # use domain::key::FlagKey;
/// use domain::audit::flag_requests;
/// use domain::policy::Resource;
/// # let mut ids = domain::SequentialIds::default();
/// # let flag = Flag::create(NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"), 1, &mut ids).unwrap();
/// let mut next = flag.clone();
/// next.tags = vec!["beta".into()];
/// let requests = flag_requests(&Resource::project("web"), &flag, &next);
/// assert_eq!(requests.len(), 2, "as it is and as it becomes");
/// assert!(requests[1].resource.matches("proj/web:env/*:flag/f;beta"));
/// ```
pub fn flag_requests(project: &Resource, previous: &Flag, next: &Flag) -> Vec<Request> {
    let mut requests = changed_flag_actions(project, previous, next, &previous.tags);
    if previous.tags != next.tags {
        requests.extend(changed_flag_actions(project, previous, next, &next.tags));
    }
    requests
}

/// The actions of a change from `previous` to `next`, on the flag carrying `tags`.
fn changed_flag_actions(
    project: &Resource,
    previous: &Flag,
    next: &Flag,
    tags: &[String],
) -> Vec<Request> {
    let flag_wide = project
        .clone()
        .environment("*")
        .flag(&next.key)
        .with_tags(tags);
    let mut accesses: Vec<Request> = flag_wide_changes(previous, next)
        .into_iter()
        .filter(|(changed, _)| *changed)
        .map(|(_, action)| Request::new(action, flag_wide.clone()))
        .collect();
    for (env, config) in &next.environments {
        let Some(old) = previous.environments.get(env) else {
            continue;
        };
        let at = project
            .clone()
            .environment(env)
            .flag(&next.key)
            .with_tags(tags);
        accesses.extend(
            environment_changes(old, config)
                .into_iter()
                .filter(|(changed, _)| *changed)
                .map(|(_, action)| Request::new(action, at.clone())),
        );
    }
    accesses
}

/// Whether each flag-wide part changed, with the action that changing it is.
fn flag_wide_changes(previous: &Flag, next: &Flag) -> [(bool, &'static str); 11] {
    [
        (previous.name != next.name, "updateName"),
        (
            previous.description != next.description,
            "updateDescription",
        ),
        (previous.tags != next.tags, "updateTags"),
        (previous.temporary != next.temporary, "updateTemporary"),
        (
            previous.variations != next.variations,
            "updateFlagVariations",
        ),
        (previous.defaults != next.defaults, "updateFlagDefaults"),
        (
            previous.maintainer_id != next.maintainer_id
                || previous.maintainer_team_key != next.maintainer_team_key,
            "updateMaintainer",
        ),
        (
            previous.client_side_availability != next.client_side_availability,
            "updateClientSideFlagAvailability",
        ),
        (
            previous.custom_properties != next.custom_properties,
            "updateFlagCustomProperties",
        ),
        (previous.archived != next.archived, "updateGlobalArchived"),
        (previous.deprecated != next.deprecated, "updateDeprecated"),
    ]
}

/// Whether each part of one environment's configuration changed, with its action.
fn environment_changes(old: &FlagConfig, config: &FlagConfig) -> [(bool, &'static str); 9] {
    [
        (old.on != config.on, "updateOn"),
        (old.rules != config.rules, "updateRules"),
        (old.fallthrough != config.fallthrough, "updateFallthrough"),
        (
            old.off_variation != config.off_variation,
            "updateOffVariation",
        ),
        (
            old.prerequisites != config.prerequisites,
            "updatePrerequisites",
        ),
        (
            old.targets != config.targets || old.context_targets != config.context_targets,
            "updateTargets",
        ),
        (old.track_events != config.track_events, "updateTrackEvents"),
        (
            old.track_events_fallthrough != config.track_events_fallthrough,
            "updateTrackEventsFallthrough",
        ),
        (old.archived != config.archived, "updateArchived"),
    ]
}

/// Replaces a secret with a masked form that keeps its kind and last four characters.
///
/// ```
/// assert_eq!(domain::audit::mask("sdk-1234-5678-abcd"), "sdk-****abcd");
/// assert_eq!(domain::audit::mask("x"), "****");
/// ```
pub fn mask(secret: &str) -> String {
    let prefix = secret
        .split_once('-')
        .map(|(p, _)| format!("{p}-"))
        .filter(|p| p.len() <= 4)
        .unwrap_or_default();
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() <= 8 {
        return "****".to_owned();
    }
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{prefix}****{tail}")
}

/// A link target in Markdown: every character but letters, digits and `@._+-` percent-encoded,
/// so that no text of a member's (an email) can close the link or open another.
fn link_target(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'@' | b'.' | b'_' | b'+' | b'-') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
