//! Which secrets may be access tokens', told without a store lookup per request: what lets a
//! valid token through while its client address is throttled for others' failed
//! authentications (a NAT or a proxy shared with a misconfigured client), and still makes the
//! store do no work per guess.
//!
//! The replica keeps the first 8 bytes of the hash of every token secret (and of every previous
//! secret not yet expired), read from the store in one query. A secret whose prefix is missing
//! makes the set be read again, at most once per [`RELOAD_INTERVAL`]: a token created or reset
//! on another replica is known at the next reload, and guesses cost the store at most one read
//! per interval, whatever their number. Deleted tokens' prefixes may linger until then: a
//! lingering prefix costs one lookup that fails, as without the set.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often, at most, the set is read again from the store.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
pub(crate) struct KnownSecrets {
    state: Mutex<Known>,
}

#[derive(Debug, Default)]
struct Known {
    prefixes: HashSet<u64>,
    loaded_at: Option<Instant>,
}

/// The first 8 bytes of a secret's hash (hex), as a number.
pub(crate) fn prefix(hash: &str) -> Option<u64> {
    hash.get(..16)
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
}

impl KnownSecrets {
    pub(crate) fn contains(&self, prefix: u64) -> bool {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .prefixes
            .contains(&prefix)
    }

    /// Whether the set may be read again now; if so, the time of this reading is taken.
    pub(crate) fn due(&self, now: Instant) -> bool {
        let mut known = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let due = known
            .loaded_at
            .is_none_or(|at| now.duration_since(at) >= RELOAD_INTERVAL);
        if due {
            known.loaded_at = Some(now);
        }
        due
    }

    /// Adds the secret hashed as `hash` (a token created or reset on this replica: known at
    /// once, without waiting for a reading).
    pub(crate) fn add(&self, hash: &str) {
        if let Some(prefix) = prefix(hash) {
            self.state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .prefixes
                .insert(prefix);
        }
    }

    pub(crate) fn replace(&self, hashes: &[String]) {
        let prefixes = hashes.iter().filter_map(|h| prefix(h)).collect();
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .prefixes = prefixes;
    }
}

/// Whether `secret` has the shape of a secret this service generates (`api-` and a UUID): one
/// that cannot be guessed, so admitting it past the throttle tells a guesser nothing.
///
/// ```
/// assert!(service::is_generated_secret("api-123e4567-e89b-42d3-a456-426614174000"));
/// assert!(!service::is_generated_secret("my-owner-token"));
/// ```
pub fn is_generated_secret(secret: &str) -> bool {
    secret
        .strip_prefix("api-")
        .is_some_and(|rest| uuid::Uuid::try_parse(rest).is_ok() && rest.len() == 36)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::hash_secret;

    #[test]
    fn a_prefix_is_the_first_eight_bytes_of_the_hash() {
        let hash = hash_secret("api-x");
        let known = KnownSecrets::default();
        known.replace(std::slice::from_ref(&hash));
        assert!(known.contains(prefix(&hash).unwrap()));
        assert!(!known.contains(prefix(&hash_secret("api-y")).unwrap()));
    }

    #[test]
    fn the_set_is_read_again_at_most_once_per_interval() {
        let known = KnownSecrets::default();
        let start = Instant::now();
        assert!(known.due(start));
        assert!(!known.due(start + Duration::from_millis(10)));
        assert!(known.due(start + RELOAD_INTERVAL));
    }
}
