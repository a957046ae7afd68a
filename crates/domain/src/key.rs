//! Keys: the stable, human-chosen identifiers of projects, environments, flags and segments.
//!
//! A key matches `^[A-Za-z0-9][A-Za-z0-9._-]*$`, is case-sensitive and never changes.
//! Project keys are at most 100 characters, other keys at most 256.
//!
//! The entities hold their key as its type ([`FlagKey`] in `Flag::key`, ...), so a key of one
//! kind is never passed where another is meant. A key reads as a `&str` (it dereferences to
//! one, and compares with one) and serialises as a JSON string. A new key is checked against the
//! rules by `parse`; an entity's document (stored, or patched: the key is read-only) is read
//! back as it is, since it names a resource that exists.

/// A key that does not follow the key rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} key '{value}': {reason}")]
pub struct InvalidKey {
    /// Which kind of key (`project`, `environment`, `flag`, `segment`).
    pub kind: &'static str,
    /// The rejected value.
    pub value: String,
    /// The rule it breaks.
    pub reason: &'static str,
}

fn check(kind: &'static str, value: &str, max: usize) -> Result<(), InvalidKey> {
    let fail = |reason| {
        Err(InvalidKey {
            kind,
            value: value.to_owned(),
            reason,
        })
    };
    let mut bytes = value.bytes();
    match bytes.next() {
        None => return fail("must not be empty"),
        Some(b) if !b.is_ascii_alphanumeric() => return fail("must start with a letter or digit"),
        Some(_) => {}
    }
    if !bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return fail("may contain only letters, digits, '.', '_' and '-'");
    }
    if value.len() > max {
        return if max == 100 {
            fail("must be at most 100 characters")
        } else {
            fail("must be at most 256 characters")
        };
    }
    Ok(())
}

macro_rules! key_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $max:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Validates `value` as a key of this kind.
            ///
            /// # Errors
            /// [`InvalidKey`] when `value` is empty, too long, or has a character outside
            /// `[A-Za-z0-9._-]` (or does not start with a letter or digit).
            pub fn parse(value: &str) -> Result<Self, InvalidKey> {
                check($kind, value, $max)?;
                Ok(Self(value.to_owned()))
            }

            /// The key as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The key as an owned string.
            pub fn into_string(self) -> String {
                self.0
            }

            /// A key as a request names it (in a path), to look a resource up by. It is
            /// not checked: text that breaks the rules names no resource, and gets the same
            /// `NotFound` as any other that names none, while a resource stored under older
            /// rules stays reachable.
            pub fn lookup(value: &str) -> Self {
                Self(value.to_owned())
            }

            /// A key read back from storage, as it was stored: it followed the rules when it
            /// was created, and names its resource even if the rules have tightened since.
            /// Only a store calls this; everything else parses.
            pub fn from_stored(value: String) -> Self {
                Self(value)
            }
        }

        crate::newtype::string_traits!($name);
    };
}

key_type!(
    /// A project key (1..=100 characters).
    ///
    /// ```
    /// use domain::key::ProjectKey;
    /// assert!(ProjectKey::parse("mobile-app").is_ok());
    /// assert!(ProjectKey::parse("-nope").is_err());
    /// assert!(ProjectKey::parse(&"a".repeat(101)).is_err());
    /// ```
    ProjectKey,
    "project",
    crate::text::MAX_PROJECT_KEY_CHARS
);
key_type!(
    /// An environment key (1..=256 characters), unique within its project.
    ///
    /// ```
    /// use domain::key::EnvironmentKey;
    /// assert_eq!(EnvironmentKey::parse("production").unwrap().as_str(), "production");
    /// assert!(EnvironmentKey::parse("prod env").is_err());
    /// ```
    EnvironmentKey,
    "environment",
    crate::text::MAX_KEY_CHARS
);
key_type!(
    /// A flag key (1..=256 characters), unique within its project.
    ///
    /// ```
    /// use domain::key::FlagKey;
    /// assert!(FlagKey::parse("new.checkout_v2").is_ok());
    /// assert!(FlagKey::parse("").is_err());
    /// ```
    FlagKey,
    "flag",
    crate::text::MAX_KEY_CHARS
);
key_type!(
    /// A segment key (1..=256 characters), unique within its environment. Segment keys follow
    /// the rules of flag keys.
    ///
    /// ```
    /// use domain::key::SegmentKey;
    /// let key = SegmentKey::parse("beta-users").unwrap();
    /// assert_eq!(key, "beta-users");
    /// assert!(SegmentKey::parse("no way").is_err());
    /// assert_eq!(serde_json::to_string(&key).unwrap(), "\"beta-users\"");
    /// ```
    SegmentKey,
    "segment",
    crate::text::MAX_KEY_CHARS
);

key_type!(
    /// A custom role's key (1..=256 characters), unique in the account.
    ///
    /// ```
    /// use domain::key::CustomRoleKey;
    /// assert!(CustomRoleKey::parse("staging-toggler").is_ok());
    /// assert!(CustomRoleKey::parse("no way").is_err());
    /// ```
    CustomRoleKey,
    "custom role",
    crate::text::MAX_KEY_CHARS
);

key_type!(
    /// A team's key (1..=256 characters), unique in the account.
    ///
    /// ```
    /// use domain::key::TeamKey;
    /// assert!(TeamKey::parse("platform").is_ok());
    /// assert!(TeamKey::parse("no way").is_err());
    /// ```
    TeamKey,
    "team",
    crate::text::MAX_KEY_CHARS
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_pattern() {
        for ok in ["a", "A1", "0", "a.b_c-d", "Z_"] {
            assert!(FlagKey::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "_a", ".a", "a b", "a/b", "é", "a\n"] {
            assert!(FlagKey::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn length_limits_differ_by_kind() {
        assert!(ProjectKey::parse(&"p".repeat(100)).is_ok());
        assert!(ProjectKey::parse(&"p".repeat(101)).is_err());
        assert!(EnvironmentKey::parse(&"e".repeat(256)).is_ok());
        assert!(EnvironmentKey::parse(&"e".repeat(257)).is_err());
    }
}
