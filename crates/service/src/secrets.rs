//! Secrets as the store keeps them: their SHA-256, never the secret.

use sha2::{Digest, Sha256};

/// The SHA-256 of a secret, in hex: what the store keeps instead of the secret.
pub(crate) fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}
