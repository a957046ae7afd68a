//! The stream's events on the wire (server-sent events of the SDKs' protocol), and the events
//! that bring an SDK holding one snapshot to the next.
//!
//! ```text
//! event: put
//! data: {"path":"/","data":{"flags":{…},"segments":{…}}}
//!
//! event: patch
//! data: {"path":"/flags/<key>","data":{…the whole flag…}}
//!
//! event: delete
//! data: {"path":"/flags/<key>","version":<int>}
//! ```
//!
//! An SDK applies a `patch` or a `delete` only above the version it holds of the item, and
//! keeps a deleted item's version (its tombstone). So the events from one snapshot to the next
//! are: a `patch` for each live item whose version went up, a `delete` at its own version for
//! an item that became a tombstone (an archived flag), and a `delete` one above the last version
//! for an item that is gone (the store's tombstone, `ports::TombstoneRepository`, starts an item
//! created again with its key above that).

use bytes::Bytes;
use domain::evaluation::{SdkFlag, SdkSegment};
use serde::Serialize;

use crate::snapshot::EnvironmentSnapshot;

/// A comment line: what keeps an idle stream's connection (and the SDK's read timeout) alive.
pub const HEARTBEAT: &[u8] = b":\n\n";

/// How many `patch` and `delete` events one step may take before a `put` of the whole
/// environment is sent instead (cheaper to send, and it cannot leave a slow stream behind).
pub const MAX_EVENTS_PER_STEP: usize = 16;

/// The `put` event of `snapshot`'s live flags and segments (the polling payload, wrapped).
pub(crate) fn put_event(snapshot: &EnvironmentSnapshot) -> Bytes {
    let payload = snapshot.payload();
    let body = payload.body();
    let mut out = Vec::with_capacity(body.len() + 48);
    out.extend_from_slice(b"event: put\ndata: {\"path\":\"/\",\"data\":");
    out.extend_from_slice(body);
    out.extend_from_slice(b"}\n\n");
    Bytes::from(out)
}

/// The `patch` event of `item` at `/{kind}/{key}`.
fn patch_event(kind: &str, key: &str, item: &impl Serialize) -> Bytes {
    #[derive(Serialize)]
    struct Patch<'a, T> {
        path: String,
        data: &'a T,
    }
    let mut out = b"event: patch\ndata: ".to_vec();
    let patch = Patch {
        path: format!("/{kind}/{key}"),
        data: item,
    };
    // Serialising plain data to memory cannot fail.
    let _ = serde_json::to_writer(&mut out, &patch);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The `delete` event of `/{kind}/{key}` at `version`.
fn delete_event(kind: &str, key: &str, version: u64) -> Bytes {
    let data = serde_json::json!({"path": format!("/{kind}/{key}"), "version": version});
    Bytes::from(format!("event: delete\ndata: {data}\n\n"))
}

/// What brings the streams of an environment from one snapshot to the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing an SDK holds changed.
    Nothing,
    /// These events, in this order.
    Events(Vec<Bytes>),
    /// Too many changes (or a version that went down, which no change makes): a `put`.
    Put,
}

/// One item of either kind as the step compares them.
trait Versioned: Serialize {
    fn key(&self) -> &str;
    fn version(&self) -> u64;
    fn deleted(&self) -> bool;
}

impl Versioned for SdkFlag {
    fn key(&self) -> &str {
        &self.key
    }
    fn version(&self) -> u64 {
        self.version
    }
    fn deleted(&self) -> bool {
        self.deleted
    }
}

impl Versioned for SdkSegment {
    fn key(&self) -> &str {
        &self.key
    }
    fn version(&self) -> u64 {
        self.version
    }
    fn deleted(&self) -> bool {
        self.deleted
    }
}

/// Adds the events of one kind to `events`; `Err(())` when a version went down.
fn step_kind<'a, T: Versioned + 'a>(
    kind: &str,
    last: impl Fn(&str) -> Option<&'a T>,
    next: impl Iterator<Item = &'a T>,
    gone: impl Iterator<Item = &'a T>,
    events: &mut Vec<Bytes>,
) -> Result<(), ()> {
    for item in next {
        let held = last(item.key());
        let held_version = held.map(Versioned::version);
        if held_version.is_some_and(|v| item.version() < v) {
            return Err(());
        }
        if held_version.is_some_and(|v| item.version() == v) {
            continue;
        }
        match (item.deleted(), held) {
            // Archived and never sent: nothing an SDK holds.
            (true, None) => {}
            (true, Some(_)) => events.push(delete_event(kind, item.key(), item.version())),
            (false, _) => events.push(patch_event(kind, item.key(), item)),
        }
    }
    for item in gone.filter(|item| !item.deleted()) {
        events.push(delete_event(kind, item.key(), item.version() + 1));
    }
    Ok(())
}

/// What brings an SDK holding `last` to `next` (a later read of the same environment):
/// segments first, then flags in creation order (a flag's new prerequisite before it).
pub(crate) fn step(last: &EnvironmentSnapshot, next: &EnvironmentSnapshot) -> Step {
    let mut events = Vec::new();
    // Segments first: a flag's new rule may name a new segment.
    let (held, now) = (last.every_segment(), next.every_segment());
    let segments = step_kind(
        "segments",
        |key| held.get(key),
        now.values(),
        held.values()
            .filter(|segment| !now.contains_key(&segment.key)),
        &mut events,
    );
    let flags = step_kind(
        "flags",
        |key| last.sdk_flag(key),
        next.every_sdk_flag(),
        last.every_sdk_flag()
            .filter(|flag| next.sdk_flag(&flag.key).is_none()),
        &mut events,
    );
    if flags.is_err() || segments.is_err() || events.len() > MAX_EVENTS_PER_STEP {
        return Step::Put;
    }
    if events.is_empty() {
        Step::Nothing
    } else {
        Step::Events(events)
    }
}
