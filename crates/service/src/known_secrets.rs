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

use ports::StoreExt;

use crate::auth::hash_secret;
use crate::{Service, ServiceResult};

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
fn prefix(hash: &str) -> Option<u64> {
    hash.get(..16)
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
}

impl KnownSecrets {
    fn contains(&self, prefix: u64) -> bool {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .prefixes
            .contains(&prefix)
    }

    /// Whether the set may be read again now; if so, the time of this reading is taken.
    fn due(&self, now: Instant) -> bool {
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

    fn replace(&self, hashes: &[String]) {
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

impl Service {
    /// Whether `secret` may be an access token's, decided from the secrets this replica knows
    /// (see the module documentation): `false` for a secret that is surely none, without asking
    /// the store more than once per [`RELOAD_INTERVAL`]. Blocks on the store when it reads.
    ///
    /// # Errors
    /// Storage errors of a reading.
    pub fn may_be_a_token(&self, secret: &str) -> ServiceResult<bool> {
        let Some(wanted) = prefix(&hash_secret(secret)) else {
            return Ok(false);
        };
        if self.known_secrets.contains(wanted) {
            return Ok(true);
        }
        if !self.known_secrets.due(Instant::now()) {
            return Ok(false);
        }
        let now = self.now();
        let hashes = self
            .store
            .read_tx(|repo| -> ServiceResult<_> { Ok(repo.list_secret_hashes(now)?) })?;
        self.known_secrets.replace(&hashes);
        Ok(self.known_secrets.contains(wanted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
