//! [`SdkPayload`]: an environment's flag data as the SDKs poll it (`/sdk/latest-all`) and as a
//! stream's first event carries it, serialised once per snapshot and shared by every request
//! and stream that sends it.

use std::io::Write;
use std::sync::OnceLock;

use bytes::Bytes;
use sha2::{Digest, Sha256};

/// An environment's flags and segments, `{"flags": {key: flag}, "segments": {key: segment}}`,
/// with a strong entity tag. Its bytes depend on the data alone (flags in creation order,
/// segments by key), so every replica tags the same data alike.
#[derive(Debug)]
pub struct SdkPayload {
    body: Bytes,
    etag: String,
    gzipped: OnceLock<Bytes>,
}

impl SdkPayload {
    /// The payload of JSON text `body` (any part of an environment's data).
    pub fn from_json(body: Vec<u8>) -> Self {
        let digest = Sha256::digest(&body);
        Self {
            etag: format!("\"{}\"", hex::encode(&digest[..16])),
            body: Bytes::from(body),
            gzipped: OnceLock::new(),
        }
    }

    /// The JSON text.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// Its strong entity tag (quoted): the first 128 bits of the body's SHA-256.
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// The JSON text, gzip-compressed (made on first use, then kept with the payload).
    pub fn gzipped(&self) -> &Bytes {
        self.gzipped.get_or_init(|| {
            let mut encoder = flate2::write::GzEncoder::new(
                Vec::with_capacity(self.body.len() / 8 + 64),
                flate2::Compression::fast(),
            );
            // Writing to memory cannot fail.
            let _ = encoder.write_all(&self.body);
            Bytes::from(encoder.finish().unwrap_or_default())
        })
    }

    /// The gzip form, if made.
    pub fn gzipped_made(&self) -> bool {
        self.gzipped.get().is_some()
    }

    /// What it weighs in memory besides the snapshot (its body, and the gzip form once made).
    pub fn weight(&self) -> usize {
        self.body.len() + self.gzipped.get().map_or(0, Bytes::len)
    }
}

/// Writes `"key":value` pairs of `items` as the inside of a JSON object.
pub(crate) fn write_members<'a, T: serde::Serialize + 'a>(
    out: &mut Vec<u8>,
    items: impl Iterator<Item = (&'a str, &'a T)>,
) {
    for (i, (key, item)) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Serialising plain data to memory cannot fail.
        let _ = serde_json::to_writer(&mut *out, key);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, item);
    }
}
