//! Comparing two answers: the status, a few headers, and the JSON bodies after setting aside what
//! legitimately differs between two servers. Generated identifiers (24 or 32 hex digits, UUIDs:
//! `_id`s, ids in `_links` hrefs and messages, token secrets, SDK and mobile keys, salts, request
//! ids) must correspond one to one: the first pair seen at one place binds the base server's id
//! to the new server's, and every later occurrence must follow that binding. Times (epoch ms,
//! also inside strings such as a `next` link's `before=`) and the four visible characters of a
//! masked secret are not compared, and the end of a token's secret that lists show (`token`,
//! `ending`) must be the end of secrets that were paired. Versions and everything else are.

use std::collections::HashMap;

use anyhow::Result;
use regex::Regex;
use serde_json::Value;

use super::server::Answer;

/// Headers whose values must match, and headers that must be present on both or neither.
const SAME_VALUE: [&str; 3] = ["content-type", "svc-api-version", "allow"];
const SAME_PRESENCE: [&str; 4] = ["location", "etag", "retry-after", "x-request-id"];
/// Where a string holds the end of a secret rather than the secret.
const SECRET_TAILS: [&str; 2] = [".token", ".ending"];
/// Epoch milliseconds from 2001 to 2286: no count or version of the API comes near.
const TIMES: std::ops::Range<u64> = 1_000_000_000_000..10_000_000_000_000;

/// Which base id stands for which new id, both ways, and the patterns of ids and of what is
/// not compared in strings.
#[derive(Debug)]
pub struct IdMap {
    forward: HashMap<String, String>,
    backward: HashMap<String, String>,
    ids: Regex,
    volatile: Regex,
}

impl IdMap {
    pub fn new() -> Result<IdMap> {
        Ok(IdMap {
            forward: HashMap::new(),
            backward: HashMap::new(),
            ids: Regex::new(
                r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}|[0-9a-f]{24}",
            )?,
            // Times in epoch ms, and the visible tail of a masked secret.
            volatile: Regex::new(r"\b\d{13}\b|\*\*\*\*[0-9a-f]{4}")?,
        })
    }

    /// Binds `base` to `new` if neither is bound yet; true when they correspond.
    fn pair(&mut self, base: &str, new: &str) -> bool {
        match (self.forward.get(base), self.backward.get(new)) {
            (Some(bound), _) => bound == new,
            (None, Some(_)) => false,
            (None, None) => {
                self.forward.insert(base.to_owned(), new.to_owned());
                self.backward.insert(new.to_owned(), base.to_owned());
                true
            }
        }
    }

    /// Whether `base` and `new` are the ends of secrets paired before (a token's `token` in
    /// lists, an audit entry's `token.ending`: its last four characters).
    fn tails_pair(&self, base: &str, new: &str) -> bool {
        base.len() == new.len()
            && base.len() <= 8
            && self
                .forward
                .iter()
                .any(|(b, n)| b.ends_with(base) && n.ends_with(new))
    }

    pub fn len(&self) -> usize {
        self.forward.len()
    }
}

/// One place where the answers differ: a JSON path (`status`, `header content-type`,
/// `body.items[0].name`) and both values, shortened.
#[derive(Debug, Clone)]
pub struct Difference {
    pub path: String,
    pub base: String,
    pub new: String,
}

/// Every difference between two answers to the same request.
pub fn answers(base: &Answer, new: &Answer, ids: &mut IdMap) -> Vec<Difference> {
    let mut found = vec![];
    if base.status != new.status {
        found.push(Difference {
            path: "status".into(),
            base: base.status.to_string(),
            new: new.status.to_string(),
        });
    }
    for name in SAME_VALUE {
        let (b, n) = (base.header(name), new.header(name));
        if b != n {
            found.push(Difference {
                path: format!("header {name}"),
                base: format!("{b:?}"),
                new: format!("{n:?}"),
            });
        }
    }
    for name in SAME_PRESENCE {
        let (b, n) = (base.header(name).is_some(), new.header(name).is_some());
        if b != n {
            found.push(Difference {
                path: format!("header {name} present"),
                base: b.to_string(),
                new: n.to_string(),
            });
        }
    }
    values("body", &base.json(), &new.json(), ids, &mut found);
    found
}

/// Every difference between two JSON values, each named by its path under `path`.
pub fn values(path: &str, base: &Value, new: &Value, ids: &mut IdMap, found: &mut Vec<Difference>) {
    let mut differ = || {
        found.push(Difference {
            path: path.to_owned(),
            base: short(base),
            new: short(new),
        });
    };
    match (base, new) {
        (Value::Object(b), Value::Object(n)) => {
            let mut keys: Vec<&String> = b.keys().chain(n.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let at = child(path, key);
                match (b.get(key), n.get(key)) {
                    (Some(bv), Some(nv)) => values(&at, bv, nv, ids, found),
                    (bv, nv) => found.push(Difference {
                        path: at,
                        base: bv.map_or_else(|| "(absent)".into(), short),
                        new: nv.map_or_else(|| "(absent)".into(), short),
                    }),
                }
            }
        }
        (Value::Array(b), Value::Array(n)) => {
            if b.len() != n.len() {
                found.push(Difference {
                    path: format!("{path}.length"),
                    base: b.len().to_string(),
                    new: n.len().to_string(),
                });
            }
            for (i, (bv, nv)) in b.iter().zip(n).enumerate() {
                values(&format!("{path}[{i}]"), bv, nv, ids, found);
            }
        }
        (Value::String(b), Value::String(n)) => {
            let tail = SECRET_TAILS.iter().any(|key| path.ends_with(key));
            let tail_pairs = tail && ids.tails_pair(b, n);
            if !strings(b, n, ids) && !tail_pairs {
                differ();
            }
        }
        (Value::Number(b), Value::Number(n)) => {
            let both_times = b
                .as_u64()
                .zip(n.as_u64())
                .is_some_and(|(b, n)| TIMES.contains(&b) && TIMES.contains(&n));
            if b != n && !both_times {
                differ();
            }
        }
        (b, n) => {
            if b != n {
                differ();
            }
        }
    }
}

/// A key after a path: `a.b`, or `a["/api/v2"]` for keys that are not plain names.
fn child(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{key:?}]"),
    }
}

/// Two strings are the same when they are equal but for times, masked tails and ids that
/// correspond.
fn strings(base: &str, new: &str, ids_seen: &mut IdMap) -> bool {
    if base == new {
        // Still bind the ids they hold (an id both servers were given, e.g. from a request).
        let found: Vec<String> = ids_seen
            .ids
            .find_iter(base)
            .map(|m| m.as_str().to_owned())
            .collect();
        for id in found {
            ids_seen.pair(&id, &id);
        }
        return true;
    }
    let base = ids_seen.volatile.replace_all(base, "#").into_owned();
    let new = ids_seen.volatile.replace_all(new, "#").into_owned();
    let ids = ids_seen.ids.clone();
    let base_ids: Vec<&str> = ids.find_iter(&base).map(|m| m.as_str()).collect();
    let new_ids: Vec<&str> = ids.find_iter(&new).map(|m| m.as_str()).collect();
    if base_ids.len() != new_ids.len() || ids.replace_all(&base, "#") != ids.replace_all(&new, "#")
    {
        return false;
    }
    base_ids
        .iter()
        .zip(&new_ids)
        .all(|(b, n)| ids_seen.pair(b, n))
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 160 {
        return text;
    }
    let cut: String = text.chars().take(157).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn differences(base: Value, new: Value, ids: &mut IdMap) -> Vec<String> {
        let mut found = vec![];
        values("body", &base, &new, ids, &mut found);
        found.into_iter().map(|d| d.path).collect()
    }

    #[test]
    fn ids_must_correspond_and_times_are_set_aside() -> Result<()> {
        let a = "aaaaaaaaaaaaaaaaaaaaaaaa";
        let b = "bbbbbbbbbbbbbbbbbbbbbbbb";
        let mut ids = IdMap::new()?;
        let base = json!({"_id": a, "href": format!("/x/{a}?before=1712345678901"), "t": 1_712_345_678_901_u64, "v": 2});
        let new = json!({"_id": b, "href": format!("/x/{b}?before=1712345999999"), "t": 1_712_345_999_999_u64, "v": 2});
        assert!(differences(base, new, &mut ids).is_empty());
        // a is bound to b: it cannot stand for another id.
        let c = "cccccccccccccccccccccccc";
        assert_eq!(
            differences(json!({"_id": a}), json!({"_id": c}), &mut ids),
            ["body._id"]
        );
        assert_eq!(
            differences(json!({"v": 2, "k": "x"}), json!({"v": 3}), &mut ids),
            ["body.k", "body.v"]
        );
        assert_eq!(
            differences(
                json!({"s": "sdk-****abcd"}),
                json!({"s": "sdk-****0123"}),
                &mut ids
            ),
            Vec::<String>::new()
        );
        Ok(())
    }
}
