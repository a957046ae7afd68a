//! What an application's variation call answers, as the original's SDKs answer it: the value
//! of the type it asked for ([`ValueType`]), else its default with a reason saying why
//! ([`typed`] on a server-side evaluation). Client-side SDKs do not evaluate: the server sends
//! them each flag's result for their context ([`ClientSideFlag`]), and their variation calls
//! read it ([`client_side_variation`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Detail, ErrorKind, Reason};

/// The type a variation call asks a flag's value in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// `boolVariation`.
    Bool,
    /// `intVariation`: any JSON number.
    Int,
    /// `doubleVariation`: any JSON number.
    Double,
    /// `stringVariation`.
    String,
    /// `jsonVariation`: any value.
    Any,
}

impl ValueType {
    /// The type the contract data names `name` (`bool`, `int`, `double`, `string`, `any`).
    ///
    /// ```
    /// use domain::evaluation::ValueType;
    /// assert_eq!(ValueType::parse("double"), Some(ValueType::Double));
    /// assert_eq!(ValueType::parse("float"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "bool" => Self::Bool,
            "int" => Self::Int,
            "double" => Self::Double,
            "string" => Self::String,
            "any" => Self::Any,
            _ => return None,
        })
    }

    /// Whether `value` is of this type.
    ///
    /// ```
    /// use domain::evaluation::ValueType;
    /// use serde_json::json;
    /// assert!(ValueType::Int.admits(&json!(1.5)));
    /// assert!(!ValueType::String.admits(&json!(1)));
    /// assert!(ValueType::Any.admits(&json!({"a": [1]})));
    /// ```
    pub fn admits(self, value: &Value) -> bool {
        match self {
            Self::Bool => value.is_boolean(),
            Self::Int | Self::Double => value.is_number(),
            Self::String => value.is_string(),
            Self::Any => true,
        }
    }
}

/// What a variation call asking for `value_type` with `default` answers for `detail` (a
/// server-side evaluation): the detail when its value is of the type; `default` with the
/// detail's reason when it has no value (off without an off variation, an error); `default`
/// with `WRONG_TYPE` when its value is of another type. `value` is then always `Some`.
///
/// ```
/// use domain::evaluation::{typed, Detail, ErrorKind, Reason, ValueType};
/// use serde_json::json;
/// let served = Detail { value: Some(json!("a")), variation_index: Some(0), reason: Reason::TargetMatch };
/// let asked = typed(served, ValueType::Bool, json!(false));
/// assert_eq!(asked.value, Some(json!(false)));
/// assert_eq!(asked.reason, Reason::Error { error_kind: ErrorKind::WrongType });
/// ```
pub fn typed(detail: Detail, value_type: ValueType, default: Value) -> Detail {
    match detail.value {
        Some(value) if value_type.admits(&value) => Detail {
            value: Some(value),
            ..detail
        },
        Some(_) => Detail {
            value: Some(default),
            variation_index: None,
            reason: Reason::Error {
                error_kind: ErrorKind::WrongType,
            },
        },
        None => Detail {
            value: Some(default),
            variation_index: None,
            reason: detail.reason,
        },
    }
}

/// One flag's result for a context, as the server sends it to client-side SDKs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClientSideFlag {
    /// The flag's version in the environment.
    #[serde(default)]
    pub version: u64,
    /// The value served (`null` when none: the application's default applies).
    #[serde(default)]
    pub value: Value,
    /// Its variation index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variation: Option<usize>,
    /// Why, when the SDK asked for reasons (or the flag always sends them); passed to the
    /// application as the server wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Value>,
    /// Whether its evaluations send full events.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub track_events: bool,
    /// Whether its events carry the reason.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub track_reason: bool,
    /// Until when (epoch ms) its evaluations send debug events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_events_until_date: Option<i64>,
}

/// What a client-side SDK's variation call answers: the value, its variation index, and the
/// reason as JSON (the server's, passed on; or the SDK's own error).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSideDetail {
    /// The value: the flag's, or the call's default.
    pub value: Value,
    /// The variation index, when the flag's value is served.
    pub variation_index: Option<usize>,
    /// Why (`None` when the server sent no reason).
    pub reason: Option<Value>,
}

/// What a client-side variation call asking for `value_type` with `default` answers from
/// `flag`, the server's result for the SDK's context (`None`: no such flag).
///
/// ```
/// use domain::evaluation::{client_side_variation, ClientSideFlag, ValueType};
/// use serde_json::json;
/// let flag: ClientSideFlag = serde_json::from_value(json!(
///     {"version": 3, "value": "blue", "variation": 1, "reason": {"kind": "FALLTHROUGH"}})).unwrap();
/// let asked = client_side_variation(Some(&flag), ValueType::String, json!("red"));
/// assert_eq!((asked.value, asked.variation_index), (json!("blue"), Some(1)));
/// let missing = client_side_variation(None, ValueType::String, json!("red"));
/// assert_eq!(missing.reason, Some(json!({"kind": "ERROR", "errorKind": "FLAG_NOT_FOUND"})));
/// ```
pub fn client_side_variation(
    flag: Option<&ClientSideFlag>,
    value_type: ValueType,
    default: Value,
) -> ClientSideDetail {
    let error = |error_kind| serde_json::to_value(Reason::Error { error_kind }).ok();
    let Some(flag) = flag else {
        return ClientSideDetail {
            value: default,
            variation_index: None,
            reason: error(ErrorKind::FlagNotFound),
        };
    };
    if flag.value.is_null() {
        return ClientSideDetail {
            value: default,
            variation_index: None,
            reason: flag.reason.clone(),
        };
    }
    if !value_type.admits(&flag.value) {
        return ClientSideDetail {
            value: default,
            variation_index: None,
            reason: error(ErrorKind::WrongType),
        };
    }
    ClientSideDetail {
        value: flag.value.clone(),
        variation_index: flag.variation,
        reason: flag.reason.clone(),
    }
}
