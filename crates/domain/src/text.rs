//! The textual rules request fields follow, as patterns and lengths.
//!
//! The validators of this crate enforce them, and the OpenAPI document states them with these
//! very constants (`pattern`, `maxLength`), so that a client generated from the document and
//! the server agree on what is valid. The patterns use the syntax common to JSON Schema
//! (ECMA-262), Python and the `regex` crate: `\uXXXX` escapes and character classes only.

use std::sync::LazyLock;

/// Keys of projects, environments, flags and segments: a letter or digit, then letters,
/// digits, `.`, `_` and `-`.
///
/// ```
/// let key = regex::Regex::new(domain::text::KEY_PATTERN).unwrap();
/// assert!(key.is_match("new-checkout.v2"));
/// assert!(!key.is_match("-nope"));
/// ```
pub const KEY_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._-]*$";

/// The longest project key, in characters.
pub const MAX_PROJECT_KEY_CHARS: usize = 100;

/// The longest environment, flag or segment key, in characters.
pub const MAX_KEY_CHARS: usize = 256;

/// Single-line text (names, emails, labels): no control character (Unicode `Cc`: C0, DEL, C1).
///
/// ```
/// let line = regex::Regex::new(domain::text::SINGLE_LINE_PATTERN).unwrap();
/// assert!(line.is_match("Checkout, new"));
/// assert!(!line.is_match("two\nlines"));
/// ```
pub const SINGLE_LINE_PATTERN: &str = r"^[^\u0000-\u001F\u007F-\u009F]*$";

/// Names: single-line text with at least one character that is not white space.
///
/// ```
/// let name = regex::Regex::new(domain::text::NAME_PATTERN).unwrap();
/// assert!(name.is_match(" New checkout"));
/// assert!(!name.is_match("   "));
/// assert!(!name.is_match(""));
/// ```
pub const NAME_PATTERN: &str = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$";

/// The longest name or label, in characters.
pub const MAX_NAME_CHARS: usize = 256;

/// Tags: letters, digits, `.`, `_` and `-`.
///
/// ```
/// let tag = regex::Regex::new(domain::text::TAG_PATTERN).unwrap();
/// assert!(tag.is_match("team.checkout"));
/// assert!(!tag.is_match("two words"));
/// ```
pub const TAG_PATTERN: &str = "^[A-Za-z0-9._-]+$";

/// The longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 64;

/// Environment colours: six hex digits, no `#`.
///
/// ```
/// let colour = regex::Regex::new(domain::text::COLOR_PATTERN).unwrap();
/// assert!(colour.is_match("F5A623"));
/// assert!(!colour.is_match("#F5A623"));
/// ```
pub const COLOR_PATTERN: &str = "^[0-9A-Fa-f]{6}$";

/// Email addresses: a local part, `@`, and a domain of two or more dot-separated labels; no
/// white space, control characters or the specials RFC 5322 keeps out of an unquoted address
/// (`( ) < > [ ] \ , ; : "`) anywhere.
///
/// ```
/// let email = regex::Regex::new(domain::text::EMAIL_PATTERN).unwrap();
/// assert!(email.is_match("ada@example.com"));
/// assert!(!email.is_match("ada@localhost"));
/// assert!(!email.is_match("ada@example..com"));
/// assert!(!email.is_match("x)[a](https://b.example)(@a.co"));
/// ```
pub const EMAIL_PATTERN: &str = r#"^[^@\s\u0000-\u001F\u007F-\u009F()<>\[\]\\,;:"]+@[^@.\s\u0000-\u001F\u007F-\u009F()<>\[\]\\,;:"]+(\.[^@.\s\u0000-\u001F\u007F-\u009F()<>\[\]\\,;:"]+)+$"#;

/// The longest email address, in characters.
pub const MAX_EMAIL_CHARS: usize = 254;

/// Object ids (projects, environments, members, tokens, webhooks, audit entries): 24 lowercase
/// hex digits.
///
/// ```
/// let id = regex::Regex::new(domain::text::ID_PATTERN).unwrap();
/// assert!(id.is_match("65f1c0ffee0123456789abcd"));
/// assert!(!id.is_match("65F1C0FFEE0123456789ABCD"));
/// ```
pub const ID_PATTERN: &str = "^[0-9a-f]{24}$";

fn compiled(pattern: &str) -> regex::Regex {
    // The patterns are constants of this module, checked by its tests.
    regex::Regex::new(pattern).unwrap_or_else(|e| panic!("invalid built-in pattern {pattern}: {e}"))
}

static NAME: LazyLock<regex::Regex> = LazyLock::new(|| compiled(NAME_PATTERN));
static EMAIL: LazyLock<regex::Regex> = LazyLock::new(|| compiled(EMAIL_PATTERN));

/// Whether `name` follows [`NAME_PATTERN`] (its length is checked apart).
///
/// ```
/// assert!(domain::text::is_name("Checkout"));
/// assert!(!domain::text::is_name(" \t"));
/// ```
pub fn is_name(name: &str) -> bool {
    NAME.is_match(name)
}

/// Whether `email` follows [`EMAIL_PATTERN`] and [`MAX_EMAIL_CHARS`].
///
/// ```
/// assert!(domain::text::is_email("ada@example.com"));
/// assert!(!domain::text::is_email("ada@"));
/// ```
pub fn is_email(email: &str) -> bool {
    email.chars().count() <= MAX_EMAIL_CHARS && EMAIL.is_match(email)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{EnvironmentKey, FlagKey, ProjectKey};

    /// Strings at the edges of every rule: the validators and the patterns must agree on them.
    fn samples() -> Vec<String> {
        let mut samples: Vec<String> = [
            "",
            " ",
            "a",
            "A",
            "0",
            "_",
            ".",
            "-",
            "a b",
            "a.b_c-d",
            "é",
            "ü-1",
            "a\u{0}",
            "a\t",
            "a\n",
            "\u{7f}",
            "\u{85}",
            "\u{9f}",
            "\u{a0}",
            "\u{a0}x",
            "\u{2028}",
            "x\u{2028}",
            "\u{3000}",
            "ab@cd",
            "a@b.c",
            "a@b..c",
            "a@.b.c",
            "a@b.c.",
            "@b.c",
            "a@@b.c",
            "a b@c.d",
            "a@b@c.d",
            "a@b.c\u{85}",
            "x)[y](z)(@a.co",
            "a\\b@c.d",
            "a,b@c.d",
            "\"a\"@b.co",
            "a<b>@c.de",
            "F5A623",
            "f5a623",
            "#F5A623",
            "F5A62",
            "F5A6234",
            "G5A623",
            "65f1c0ffee0123456789abcd",
            "65F1C0FFEE0123456789ABCD",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        for n in [63, 64, 65, 99, 100, 101, 253, 254, 255, 256, 257] {
            samples.push("k".repeat(n));
            samples.push(format!("{}@example.com", "é".repeat(n.saturating_sub(12))));
        }
        samples
    }

    fn matches(pattern: &str, text: &str) -> bool {
        compiled(pattern).is_match(text)
    }

    #[test]
    fn key_validators_follow_the_key_pattern_and_lengths() {
        for s in samples() {
            let by_pattern = matches(KEY_PATTERN, &s);
            let chars = s.chars().count();
            assert_eq!(
                ProjectKey::parse(&s).is_ok(),
                by_pattern && chars <= MAX_PROJECT_KEY_CHARS,
                "{s:?}"
            );
            assert_eq!(
                EnvironmentKey::parse(&s).is_ok(),
                by_pattern && chars <= MAX_KEY_CHARS,
                "{s:?}"
            );
            assert_eq!(
                FlagKey::parse(&s).is_ok(),
                by_pattern && chars <= MAX_KEY_CHARS,
                "{s:?}"
            );
        }
    }

    #[test]
    fn name_and_line_validators_follow_their_patterns() {
        for s in samples() {
            let mut errors = vec![];
            crate::validate_name("name", &s, &mut errors);
            let expected = matches(NAME_PATTERN, &s) && s.chars().count() <= MAX_NAME_CHARS;
            assert_eq!(errors.is_empty(), expected, "{s:?}");
            let mut errors = vec![];
            crate::validate_single_line("name", &s, &mut errors);
            assert_eq!(errors.is_empty(), matches(SINGLE_LINE_PATTERN, &s), "{s:?}");
        }
    }

    #[test]
    fn tag_validator_follows_the_tag_pattern() {
        for s in samples() {
            let mut errors = vec![];
            crate::validate_tags("tags", std::slice::from_ref(&s), &mut errors);
            let expected = matches(TAG_PATTERN, &s) && s.chars().count() <= MAX_TAG_CHARS;
            assert_eq!(errors.is_empty(), expected, "{s:?}");
        }
    }

    #[test]
    fn email_check_follows_the_email_pattern() {
        for s in samples() {
            assert_eq!(
                is_email(&s),
                matches(EMAIL_PATTERN, &s) && s.chars().count() <= MAX_EMAIL_CHARS,
                "{s:?}"
            );
        }
    }
}
