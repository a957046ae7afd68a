//! Ids: the identifiers (`_id`) the service gives projects, environments, members, access
//! tokens, webhooks and audit entries when it creates them.
//!
//! An id is 24 lowercase hex digits ([`crate::text::ID_PATTERN`]), is made from an
//! [`IdSource`] (the service's is random) and never changes. Unlike a key, nobody chooses it.
//!
//! The entities hold their id as its type ([`MemberId`] in `Member::id` and `Token::member_id`,
//! ...), so an id of one kind is never passed where another is meant, and "is this me?" compares
//! ids of the same kind. An id reads as a `&str` (it dereferences to one, and compares with one)
//! and serialises as a JSON string. `parse` checks the 24-hex form; an entity's document is read
//! back as it is, since the service made its ids.
//!
//! ```
//! use domain::id::{MemberId, TokenId};
//! use domain::SequentialIds;
//!
//! let member = MemberId::parse("65f1c0ffee0123456789abcd").unwrap();
//! assert_eq!(member, "65f1c0ffee0123456789abcd");
//! assert!(MemberId::parse("me").is_err());
//! assert!(MemberId::parse("65F1C0FFEE0123456789ABCD").is_err(), "lowercase only");
//! let token = TokenId::generate(&mut SequentialIds::default());
//! assert_eq!(token.as_str(), "000000000000000000000001");
//! assert_eq!(serde_json::to_string(&member).unwrap(), "\"65f1c0ffee0123456789abcd\"");
//! ```

use crate::IdSource;

/// How many hex digits an id has.
pub const ID_LEN: usize = 24;

/// An id that is not 24 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} id '{value}': must be 24 lowercase hex digits")]
pub struct InvalidId {
    /// Which kind of id (`project`, `environment`, `member`, `token`, `webhook`, `audit entry`).
    pub kind: &'static str,
    /// The rejected value.
    pub value: String,
}

fn check(kind: &'static str, value: &str) -> Result<(), InvalidId> {
    let ok = value.len() == ID_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok {
        Ok(())
    } else {
        Err(InvalidId {
            kind,
            value: value.to_owned(),
        })
    }
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Validates `value` as an id of this kind.
            ///
            /// # Errors
            /// [`InvalidId`] when `value` is not 24 lowercase hex digits.
            pub fn parse(value: &str) -> Result<Self, InvalidId> {
                check($kind, value)?;
                Ok(Self(value.to_owned()))
            }

            /// A new id: 24 hex digits from `ids` (whose hex is lowercase).
            pub fn generate(ids: &mut dyn IdSource) -> Self {
                Self(ids.hex(ID_LEN))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id as an owned string.
            pub fn into_string(self) -> String {
                self.0
            }

            /// An id read back from storage, as it was stored: the service made it. Only a
            /// store calls this; everything else parses or generates.
            pub fn from_stored(value: String) -> Self {
                Self(value)
            }
        }

        crate::newtype::string_traits!($name);
    };
}

id_type!(
    /// A project's `_id`.
    ///
    /// ```
    /// use domain::id::ProjectId;
    /// assert!(ProjectId::parse("0123456789abcdef01234567").is_ok());
    /// assert!(ProjectId::parse("web").is_err());
    /// ```
    ProjectId,
    "project"
);
id_type!(
    /// An environment's `_id`, which is also its client-side ID.
    ///
    /// ```
    /// use domain::id::EnvironmentId;
    /// let id = EnvironmentId::parse("0123456789abcdef01234567").unwrap();
    /// assert_eq!(id.as_str(), "0123456789abcdef01234567");
    /// ```
    EnvironmentId,
    "environment"
);
id_type!(
    /// A member's `_id`.
    ///
    /// ```
    /// use domain::id::MemberId;
    /// assert!(MemberId::parse(&"0".repeat(24)).is_ok());
    /// assert!(MemberId::parse(&"0".repeat(23)).is_err());
    /// ```
    MemberId,
    "member"
);
id_type!(
    /// An access token's `_id`.
    ///
    /// ```
    /// use domain::id::TokenId;
    /// assert!(TokenId::parse("0123456789abcdef0123456g").is_err());
    /// ```
    TokenId,
    "token"
);
id_type!(
    /// A webhook's `_id`.
    ///
    /// ```
    /// use domain::id::WebhookId;
    /// let id: WebhookId = serde_json::from_str("\"0123456789abcdef01234567\"").unwrap();
    /// assert_eq!(id.to_string(), "0123456789abcdef01234567");
    /// ```
    WebhookId,
    "webhook"
);
id_type!(
    /// An audit entry's `_id`.
    ///
    /// ```
    /// use domain::id::AuditEntryId;
    /// assert!(AuditEntryId::parse("0123456789abcdef01234567").is_ok());
    /// ```
    AuditEntryId,
    "audit entry"
);

id_type!(
    /// A custom role's `_id`.
    ///
    /// ```
    /// use domain::id::CustomRoleId;
    /// assert!(CustomRoleId::parse("0123456789abcdef01234567").is_ok());
    /// ```
    CustomRoleId,
    "custom role"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_id_pattern() {
        let pattern = regex::Regex::new(crate::text::ID_PATTERN).unwrap();
        for sample in [
            "65f1c0ffee0123456789abcd",
            "000000000000000000000000",
            "65F1C0FFEE0123456789ABCD",
            "65f1c0ffee0123456789abc",
            "65f1c0ffee0123456789abcde",
            "65f1c0ffee0123456789abcg",
            "",
            "me",
            "65f1c0ffee0123456789abc\u{e9}",
        ] {
            assert_eq!(
                MemberId::parse(sample).is_ok(),
                pattern.is_match(sample),
                "{sample:?}"
            );
        }
    }

    #[test]
    fn generated_ids_are_valid() {
        let mut ids = crate::SequentialIds::default();
        let id = WebhookId::generate(&mut ids);
        assert_eq!(WebhookId::parse(&id), Ok(id));
    }
}
