//! Bucketing: where a context falls in `[0, 1)` for a rollout or a weighted segment rule, as
//! every SDK computes it (SHA-1, in 32-bit floats as the Go and Rust SDKs do).

use serde_json::Value;
use sha1::{Digest, Sha1};

use super::context::{AttributeRef, Context};

/// 15 hex digits of the hash, scaled to `[0, 1]`.
const SCALE: f32 = 0xFFF_FFFF_FFFF_FFFF_u64 as f32;

/// What a rollout or a segment rule buckets by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BucketBy<'a> {
    /// The context kind bucketed.
    pub kind: &'a str,
    /// The attribute (`key` unless said).
    pub attribute: Option<&'a AttributeRef>,
    /// `"{flag or segment key}.{salt}"`, unless a seed replaces it.
    pub key: &'a str,
    pub salt: &'a str,
    pub seed: Option<i64>,
}

/// The bucket of `context`, and whether it has the kind bucketed (one without it, or without
/// a bucketable value, is in bucket 0).
pub(crate) fn bucket(context: &Context, by: &BucketBy<'_>) -> (f32, bool) {
    let Some(single) = context.as_kind(by.kind) else {
        return (0.0, false);
    };
    let value = match by.attribute {
        None => Some(Value::String(single.key().to_owned())),
        Some(attribute) => single.get(attribute),
    };
    let Some(id) = value.as_ref().and_then(bucketable) else {
        return (0.0, true);
    };
    let input = match by.seed {
        Some(seed) => format!("{seed}.{id}"),
        None => format!("{}.{}.{id}", by.key, by.salt),
    };
    let digest = Sha1::digest(input.as_bytes());
    // The first 15 hex digits: the first 7.5 bytes.
    let mut prefix = 0u64;
    for byte in &digest[..8] {
        prefix = (prefix << 8) | u64::from(*byte);
    }
    let prefix = prefix >> 4;
    #[allow(clippy::cast_precision_loss)]
    let bucket = prefix as f32 / SCALE;
    (bucket, true)
}

/// A value bucketed by: a string as it is, an integer in decimal; anything else is not.
fn bucketable(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                return Some(i.to_string());
            }
            let f = n.as_f64()?;
            #[allow(clippy::cast_possible_truncation)]
            (f.fract() == 0.0 && f.abs() < 9.0e15).then(|| (f as i64).to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluation::context::SingleContext;

    fn bucket_of(key: &str, seed: Option<i64>) -> f32 {
        let context = Context::single(SingleContext::new("user", key).unwrap());
        let by = BucketBy {
            kind: "user",
            attribute: None,
            key: "hashKey",
            salt: "saltyA",
            seed,
        };
        bucket(&context, &by).0
    }

    #[test]
    fn the_reference_vectors_hold() {
        let close = |a: f32, b: f32| (a - b).abs() < 1e-7;
        assert!(close(bucket_of("userKeyA", None), 0.421_575_87));
        assert!(close(bucket_of("userKeyB", None), 0.670_848_5));
        assert!(close(bucket_of("userKeyC", None), 0.103_431_06));
        assert!(close(bucket_of("userKeyA", Some(61)), 0.098_012_07));
        assert!(close(bucket_of("userKeyB", Some(61)), 0.144_837_77));
        assert!(close(bucket_of("userKeyC", Some(61)), 0.924_264_1));
    }

    #[test]
    fn integers_bucket_and_other_values_fall_in_zero() {
        assert_eq!(bucketable(&serde_json::json!(33)), Some("33".into()));
        assert_eq!(bucketable(&serde_json::json!(33.0)), Some("33".into()));
        assert_eq!(bucketable(&serde_json::json!(33.5)), None);
        assert_eq!(bucketable(&serde_json::json!(true)), None);
    }
}
