//! API versions selected by the `Svc-API-Version` header.

use std::fmt;

/// A version of the API's behaviour.
///
/// ```
/// use domain::version::ApiVersion;
/// assert_eq!(ApiVersion::parse("20240415"), Ok(ApiVersion::V20240415));
/// assert_eq!(ApiVersion::parse("beta"), Ok(ApiVersion::Beta));
/// assert!(ApiVersion::parse("2024").is_err());
/// assert_eq!(ApiVersion::CURRENT.to_string(), "20240415");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiVersion {
    /// The older behaviour: unpaged flag lists that always include environments.
    V20220603,
    /// The current version.
    V20240415,
    /// The current version plus beta-only routes.
    Beta,
}

/// A version value that is not one of the valid versions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid API version '{0}': valid versions are 20240415, 20220603 and beta")]
pub struct InvalidVersion(pub String);

impl ApiVersion {
    /// The version used when neither the request nor the token names one.
    pub const CURRENT: ApiVersion = ApiVersion::V20240415;
    /// The dated versions, newest first.
    pub const VALID_DATES: [i32; 2] = [20240415, 20220603];

    /// Every value the `Svc-API-Version` header takes.
    pub const HEADER_VALUES: [&'static str; 3] = ["20240415", "20220603", "beta"];

    /// Parses a header value: exactly one of [`Self::HEADER_VALUES`] (letter case counts);
    /// surrounding whitespace, which is not part of an HTTP field value, is ignored.
    ///
    /// ```
    /// use domain::version::ApiVersion;
    /// assert_eq!(ApiVersion::parse(" 20220603 "), Ok(ApiVersion::V20220603));
    /// assert!(ApiVersion::parse("BETA").is_err());
    /// assert!(ApiVersion::parse("").is_err());
    /// assert!(ApiVersion::parse("2024 0415").is_err());
    /// ```
    ///
    /// # Errors
    /// [`InvalidVersion`] for anything but `20240415`, `20220603` or `beta`.
    pub fn parse(value: &str) -> Result<Self, InvalidVersion> {
        match value.trim() {
            "20240415" => Ok(ApiVersion::V20240415),
            "20220603" => Ok(ApiVersion::V20220603),
            "beta" => Ok(ApiVersion::Beta),
            other => Err(InvalidVersion(other.to_owned())),
        }
    }

    /// The version for a token's `defaultApiVersion`.
    ///
    /// # Errors
    /// [`InvalidVersion`] for a number that is not a valid dated version.
    pub fn from_date(date: i32) -> Result<Self, InvalidVersion> {
        Self::parse(&date.to_string())
    }

    /// The dated version whose behaviour applies (`beta` behaves as the current version).
    pub fn date(self) -> i32 {
        match self {
            ApiVersion::V20220603 => 20220603,
            ApiVersion::V20240415 | ApiVersion::Beta => 20240415,
        }
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiVersion::Beta => f.write_str("beta"),
            v => write!(f, "{}", v.date()),
        }
    }
}
