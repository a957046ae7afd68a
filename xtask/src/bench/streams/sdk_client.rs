//! An SDK-like client of `GET /all` for the chaos case: it keeps a store as the original's
//! SDKs do (a `put` replaces everything; a `patch` or `delete` applies only above the version
//! held, and a deleted item stays as a tombstone with its version), and when its stream ends
//! or fails it connects again after a short backoff, to the next replica when the one it used
//! does not answer (as a load balancer would), starting over from the new `put`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use super::sse::{self, Kind, Opened, SseStream};

/// How long opening a stream may take before the client tries again.
const OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// The first backoff after a failure; it doubles up to `BACKOFF_MAX`.
const BACKOFF: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// An item as the SDK holds it: `None` is a tombstone.
#[derive(Debug, Clone)]
struct Item {
    version: u64,
    value: Option<Value>,
}

/// The SDK's store: items by `flags/<key>` or `segments/<key>`.
#[derive(Debug, Default)]
pub struct SdkStore {
    items: BTreeMap<String, Item>,
}

fn version_of(value: &Value) -> Result<u64> {
    value["version"].as_u64().context("an item without version")
}

impl SdkStore {
    /// Replaces everything with a `put`'s data; how many items it holds at a lower version
    /// than the store did.
    pub fn put(&mut self, event: &Value) -> Result<usize> {
        let mut items = BTreeMap::new();
        for kind in ["flags", "segments"] {
            let Some(all) = event["data"][kind].as_object() else {
                continue;
            };
            for (key, item) in all {
                let version = version_of(item)?;
                let value = Some(item.clone());
                items.insert(format!("{kind}/{key}"), Item { version, value });
            }
        }
        let backwards = items
            .iter()
            .filter(|(k, i)| self.items.get(*k).is_some_and(|h| i.version < h.version))
            .count();
        self.items = items;
        Ok(backwards)
    }

    /// Applies a `patch` (`data` given) or a `delete`; `Ok(Some(held))` when its version was
    /// not above the one held (and it was ignored).
    pub fn apply(&mut self, event: &Value, kind: Kind) -> Result<Option<u64>> {
        let path = event["path"]
            .as_str()
            .context("an event without path")?
            .trim_start_matches('/')
            .to_owned();
        let (version, value) = match kind {
            Kind::Patch => (version_of(&event["data"])?, Some(event["data"].clone())),
            _ => (version_of(event)?, None),
        };
        if let Some(held) = self.items.get(&path).filter(|h| h.version >= version) {
            return Ok(Some(held.version));
        }
        self.items.insert(path, Item { version, value });
        Ok(None)
    }

    /// How the live items differ from a `GET /sdk/latest-all` answer (empty: not at all).
    pub fn differences(&self, latest: &Value) -> Vec<String> {
        let mut server = BTreeMap::new();
        for kind in ["flags", "segments"] {
            for (key, item) in latest[kind].as_object().into_iter().flatten() {
                server.insert(format!("{kind}/{key}"), item);
            }
        }
        let mut differences = vec![];
        for (path, item) in &self.items {
            let Some(value) = &item.value else { continue };
            match server.get(path) {
                None => differences.push(format!("{path} v{} held, not served", item.version)),
                Some(served) if *served != value => differences.push(format!(
                    "{path} held v{}, served v{}",
                    item.version, served["version"]
                )),
                Some(_) => {}
            }
        }
        for (path, served) in server {
            if self.items.get(&path).is_none_or(|i| i.value.is_none()) {
                differences.push(format!("{path} v{} served, not held", served["version"]));
            }
        }
        differences
    }
}

/// What one client did and holds.
#[derive(Debug, Default)]
pub struct ClientLog {
    pub store: SdkStore,
    /// Streams that delivered their `put`.
    pub connections: u64,
    /// Of them, on a replica other than the client's first.
    pub moved: u64,
    /// Answers other than 200 to `GET /all`; failures to connect (or to read the answer's
    /// head); open streams that broke (the connection failed or closed without the last
    /// chunk).
    pub refusals: u64,
    pub connect_failures: u64,
    pub errors: u64,
    /// Streams the server ended (the last chunk).
    pub ended: u64,
    pub events: u64,
    /// `patch`/`delete` events not above the version held, within one connection.
    pub stale: u64,
    pub stale_sample: Option<String>,
    /// `put`s after the first of a connection, and the items they took back.
    pub later_puts: u64,
    pub put_backwards: u64,
    pub last_error: Option<String>,
    /// Whether a stream is open now (its `put` read).
    pub streaming: bool,
}

pub fn lock(log: &Mutex<ClientLog>) -> MutexGuard<'_, ClientLog> {
    log.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs client `id` until it is aborted; it starts on `addresses[id % len]`.
pub async fn run(
    id: usize,
    addresses: Arc<[SocketAddr]>,
    key: Arc<str>,
    log: Arc<Mutex<ClientLog>>,
) {
    let first = id % addresses.len();
    let mut replica = first;
    let mut failures = 0u32;
    loop {
        let opened = tokio::time::timeout(OPEN_TIMEOUT, sse::open(addresses[replica], &key)).await;
        let delivered = match opened {
            Ok(Ok(Opened::Stream(stream))) => {
                let (delivered, end) = follow(*stream, &log, replica != first).await;
                let mut log = lock(&log);
                log.streaming = false;
                match end {
                    Ok(()) => log.ended += 1,
                    Err(e) => {
                        log.errors += 1;
                        log.last_error = Some(format!("{e:#}"));
                    }
                }
                delivered
            }
            Ok(Ok(Opened::Refused { status, body })) => {
                let mut log = lock(&log);
                log.refusals += 1;
                log.last_error = Some(format!("GET /all answered {status}: {body}"));
                false
            }
            Ok(Err(e)) => {
                let mut log = lock(&log);
                log.connect_failures += 1;
                log.last_error = Some(format!("{e:#}"));
                false
            }
            Err(_) => {
                lock(&log).connect_failures += 1;
                false
            }
        };
        if delivered {
            failures = 0;
        } else {
            // Not answered here: the next replica, as a load balancer would.
            replica = (replica + 1) % addresses.len();
            failures += 1;
        }
        let backoff = BACKOFF
            .saturating_mul(1 << failures.min(4))
            .min(BACKOFF_MAX);
        let jitter = Duration::from_millis((id as u64 * 7) % 50);
        tokio::time::sleep(backoff / 2 + jitter).await;
    }
}

/// Reads one stream into the store until it ends: whether its `put` arrived, and how it ended.
async fn follow(mut stream: SseStream, log: &Mutex<ClientLog>, moved: bool) -> (bool, Result<()>) {
    let mut put_seen = false;
    loop {
        let event = match stream.next_event().await {
            Ok(Some(event)) => event,
            Ok(None) => return (put_seen, Ok(())),
            Err(e) => return (put_seen, Err(e)),
        };
        let parsed: Value = match serde_json::from_str(&event.data) {
            Ok(parsed) => parsed,
            Err(e) if event.kind == Kind::Other => {
                let _ = e;
                continue;
            }
            Err(e) => return (put_seen, Err(e).context("an event's data")),
        };
        let mut log = lock(log);
        log.events += 1;
        let applied = match event.kind {
            Kind::Put => log.store.put(&parsed).map(|backwards| {
                if put_seen {
                    log.later_puts += 1;
                    log.put_backwards += backwards as u64;
                } else {
                    log.connections += 1;
                    log.moved += u64::from(moved);
                    log.streaming = true;
                }
                put_seen = true;
            }),
            Kind::Patch | Kind::Delete if put_seen => {
                log.store.apply(&parsed, event.kind).map(|stale| {
                    if let Some(held) = stale {
                        log.stale += 1;
                        log.stale_sample.get_or_insert_with(|| {
                            let text: String = event.data.chars().take(120).collect();
                            format!("held v{held}, got {text}")
                        });
                    }
                })
            }
            _ => Ok(()),
        };
        if let Err(e) = applied {
            return (put_seen, Err(e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_versions_and_tombstones() {
        let mut store = SdkStore::default();
        let put = json!({"path": "/", "data": {"flags": {"a": {"key": "a", "version": 2}}, "segments": {}}});
        assert_eq!(store.put(&put).unwrap(), 0);
        let older = json!({"path": "/flags/a", "data": {"key": "a", "version": 2}});
        assert_eq!(store.apply(&older, Kind::Patch).unwrap(), Some(2));
        let delete = json!({"path": "/flags/a", "version": 3});
        assert_eq!(store.apply(&delete, Kind::Delete).unwrap(), None);
        let late = json!({"path": "/flags/a", "data": {"key": "a", "version": 3}});
        assert_eq!(store.apply(&late, Kind::Patch).unwrap(), Some(3));
        assert!(store
            .differences(&json!({"flags": {}, "segments": {}}))
            .is_empty());
        let served = json!({"flags": {"a": {"key": "a", "version": 4}}, "segments": {}});
        assert_eq!(store.differences(&served).len(), 1);
    }
}
