//! Integers a request body writes that a JSON number here cannot keep exactly (beyond 64-bit
//! integers, and not a double either): refused with a 400 naming the field, rather than
//! rounded silently (`123456789012345678901234567890` would become `1.2345678901234568e+29`,
//! and two such values would collide).
//!
//! Handwritten: serde_json (without `arbitrary_precision`, which would change every number of
//! the workspace) reads such an integer as the nearest double before any visitor sees its
//! text, so the body's text is scanned for them. Only a body holding 16 digits in a row is
//! scanned at all; the scan reads it once, and its depth is bounded by the body depth limit
//! checked before.

use crate::error::ApiError;

/// Digits in a row below which every integer is exact (`2^53` has 16 digits).
const SHORTEST_INEXACT: usize = 16;

/// Refuses `body` (JSON that parsed) if it writes an integer no JSON number keeps exactly.
///
/// # Errors
/// 400 `invalid_request` naming the field and the integer.
pub fn check_exact_integers(body: &[u8]) -> Result<(), ApiError> {
    let mut run = 0usize;
    // Digits of one number in a row (a decimal point does not break the run).
    let long_digits = body.iter().any(|b| {
        run = match b {
            b'0'..=b'9' => run + 1,
            b'.' => run,
            _ => 0,
        };
        run >= SHORTEST_INEXACT
    });
    if !long_digits {
        return Ok(());
    }
    let mut scanner = Scanner {
        bytes: body,
        at: 0,
        path: Vec::new(),
    };
    scanner.value().map_or(Ok(()), |(path, literal)| {
        let field = if path.is_empty() { "the body".to_owned() } else { path };
        Err(ApiError {
            errors: vec![domain::FieldError::new(
                field.clone(),
                format!("{literal} cannot be kept exactly (integers are exact within 64 bits); send it as a string"),
            )],
            ..ApiError::invalid(format!(
                "{field}: the integer {literal} is beyond what a JSON number keeps exactly (64-bit integers, or doubles); send it as a string"
            ))
        })
    })
}

/// The integer a number literal with a fraction or an exponent stands for (`1.5e3` is `1500`,
/// `2.0` is `2`), in decimal digits with its sign, when it is written with at least
/// [`SHORTEST_INEXACT`] significant digits (more than a double keeps: `1e23` is a double as
/// written, `1.8446744073709551617E19` an integer no number here holds); `None` for one that
/// is no integer (`0.1`), which no reader expects to be exact.
fn integer_value(literal: &str) -> Option<String> {
    let (negative, unsigned) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits = format!("{whole}{fraction}");
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
    if significant < SHORTEST_INEXACT {
        return None;
    }
    let mut exponent = exponent.checked_sub(i64::try_from(fraction.len()).ok()?)?;
    while exponent < 0 && digits.ends_with('0') {
        digits.pop();
        exponent += 1;
    }
    if exponent < 0 {
        return None;
    }
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some("0".to_owned());
    }
    // Past 400 digits no double holds it (nor does serde_json read it).
    let zeros = usize::try_from(exponent)
        .ok()
        .filter(|z| digits.len() + z <= 400)?;
    let sign = if negative { "-" } else { "" };
    Some(format!("{sign}{digits}{}", "0".repeat(zeros)))
}

/// Whether the integer `literal` (JSON text, no fraction or exponent) is kept exactly: read
/// as a 64-bit integer, or as a double that is that integer.
fn exact(literal: &str) -> bool {
    literal.parse::<i64>().is_ok() || literal.parse::<u64>().is_ok() || exact_double(literal)
}

/// Whether the integer `literal` (decimal digits, a sign) is a double exactly: what a number
/// written with a fraction or an exponent is read as.
fn exact_double(literal: &str) -> bool {
    let digits = literal.trim_start_matches('-');
    literal
        .parse::<f64>()
        .is_ok_and(|float| float.is_finite() && format!("{:.0}", float.abs()) == digits)
}

enum Step {
    Key(String),
    Index(usize),
}

struct Scanner<'b> {
    bytes: &'b [u8],
    at: usize,
    path: Vec<Step>,
}

/// The first inexact integer: its field's path and its text.
type Found = Option<(String, String)>;

impl Scanner<'_> {
    fn skip_space(&mut self) {
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn path(&self) -> String {
        let mut out = String::new();
        for step in &self.path {
            match step {
                Step::Key(key) if out.is_empty() => out.push_str(key),
                Step::Key(key) => {
                    out.push('.');
                    out.push_str(key);
                }
                Step::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    /// Skips a string (the scanner on its opening quote); its text, decoded.
    fn string(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += 1;
            match b {
                b'\\' => self.at += 1,
                b'"' => break,
                _ => {}
            }
        }
        serde_json::from_slice(&self.bytes[start..self.at.min(self.bytes.len())])
            .unwrap_or_default()
    }

    fn value(&mut self) -> Found {
        self.skip_space();
        match self.bytes.get(self.at)? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => {
                self.string();
                None
            }
            b'-' | b'0'..=b'9' => self.number(),
            _ => {
                // true, false, null
                while self.bytes.get(self.at).is_some_and(u8::is_ascii_alphabetic) {
                    self.at += 1;
                }
                None
            }
        }
    }

    fn number(&mut self) -> Found {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
        {
            self.at += 1;
        }
        let literal = std::str::from_utf8(&self.bytes[start..self.at]).unwrap_or_default();
        let inexact = if literal.contains(['.', 'e', 'E']) {
            integer_value(literal).is_some_and(|integer| !exact_double(&integer))
        } else {
            !exact(literal)
        };
        inexact.then(|| (self.path(), literal.to_owned()))
    }

    fn object(&mut self) -> Found {
        self.at += 1;
        loop {
            self.skip_space();
            match self.bytes.get(self.at)? {
                b'}' => {
                    self.at += 1;
                    return None;
                }
                b',' => self.at += 1,
                b'"' => {
                    let key = self.string();
                    self.skip_space();
                    self.at += 1; // ':'
                    self.path.push(Step::Key(key));
                    let found = self.value();
                    self.path.pop();
                    if found.is_some() {
                        return found;
                    }
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self) -> Found {
        self.at += 1;
        let mut index = 0;
        loop {
            self.skip_space();
            match self.bytes.get(self.at)? {
                b']' => {
                    self.at += 1;
                    return None;
                }
                b',' => {
                    self.at += 1;
                    index += 1;
                }
                _ => {
                    self.path.push(Step::Index(index));
                    let found = self.value();
                    self.path.pop();
                    if found.is_some() {
                        return found;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &str) -> Option<String> {
        check_exact_integers(body.as_bytes())
            .err()
            .map(|e| e.errors[0].attribute.clone())
    }

    #[test]
    fn integers_no_number_keeps_exactly_are_named() {
        let body = r#"{"variations": [{"value": 1}, {"value": {"a\"b": 123456789012345678901234567890}}]}"#;
        assert_eq!(refused(body).as_deref(), Some("variations[1].value.a\"b"));
        assert_eq!(
            refused("[1, -99999999999999999999]").as_deref(),
            Some("[1]")
        );
        assert_eq!(
            refused("123456789012345678901234567890").as_deref(),
            Some("the body")
        );
        // The same integers written with a fraction or an exponent.
        for body in [
            r#"{"v": 18446744073709551617.0}"#,
            r#"{"v": 1.8446744073709551617E19}"#,
            r#"{"v": 9007199254740993.0}"#,
            r#"{"v": 900719925474.0993e4}"#,
        ] {
            assert_eq!(refused(body).as_deref(), Some("v"), "{body}");
        }
    }

    #[test]
    fn what_a_number_keeps_exactly_passes() {
        for body in [
            r#"{"n": 18446744073709551615, "m": -9223372036854775808}"#,
            r#"{"exact double": 1000000000000000019884624838656}"#,
            r#"{"float": 1234567890123456789.5, "e": 1e23, "small": 2.50e1}"#,
            r#"{"exact": 18446744073709551616.0, "fraction": 0.12345678901234567890}"#,
            r#"{"text": "123456789012345678901234567890"}"#,
        ] {
            assert_eq!(refused(body), None, "{body}");
        }
    }
}
