//! [`Change`]: what a use case changed, as its audit entry will record it.

use domain::audit::ShownVersion;
use domain::policy::{Request, Resource};
use serde_json::Value;

/// What a use case changed, for its audit entry.
#[derive(Debug, Clone, Default)]
pub(crate) struct Change {
    /// `flag`, `project`, `environment`, `segment`, `member`, `token`, `webhook`.
    pub kind: &'static str,
    /// The resource's name (its key for most kinds).
    pub name: String,
    /// `created`, `updated`, `deleted`, ...
    pub verb: &'static str,
    /// Every action with its resource (and the resource's tags): each is decided by the
    /// caller's policies before the entry is written, and recorded in it (without tags).
    pub accesses: Vec<Request>,
    /// The resource's specifiers.
    pub resources: Vec<String>,
    /// Where the resource lives in the API (its path), if it has an address.
    pub href: Option<String>,
    /// The comment sent with the change.
    pub comment: Option<String>,
    /// The patch, merge document or instructions sent.
    pub delta: Option<Value>,
    /// The resource before (secrets masked).
    pub previous: Option<ShownVersion>,
    /// The resource after (secrets masked).
    pub current: Option<ShownVersion>,
}

impl Change {
    /// A change with one action on one resource.
    pub fn new(
        kind: &'static str,
        name: &str,
        verb: &'static str,
        action: &str,
        resource: Resource,
    ) -> Self {
        Self {
            kind,
            name: name.to_owned(),
            verb,
            resources: vec![resource.to_string()],
            accesses: vec![Request::new(action, resource)],
            ..Default::default()
        }
    }

    pub fn href(mut self, href: String) -> Self {
        self.href = Some(href);
        self
    }

    pub fn comment(mut self, comment: Option<String>) -> Self {
        self.comment = comment;
        self
    }

    pub fn delta(mut self, delta: Option<Value>) -> Self {
        self.delta = delta;
        self
    }

    /// The resource before and after, as JSON trees.
    pub fn versions(self, previous: Option<Value>, current: Option<Value>) -> Self {
        self.shown_versions(previous.map(Into::into), current.map(Into::into))
    }

    /// The resource before and after, as rendered JSON text.
    pub fn shown_versions(
        mut self,
        previous: Option<ShownVersion>,
        current: Option<ShownVersion>,
    ) -> Self {
        self.previous = previous;
        self.current = current;
        self
    }
}
