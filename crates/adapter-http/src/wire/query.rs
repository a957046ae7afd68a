//! Query parameters: read once, checked strictly, with the descriptions the routes declare.

use actix_web::HttpRequest;

use crate::error::ApiError;

/// Query-string parameters, keeping repeated names (`env=a&env=b`).
#[derive(Debug, Clone, Default)]
pub struct QueryParams(Vec<(String, String)>);

impl QueryParams {
    /// Parses the request's query string.
    pub fn of(req: &HttpRequest) -> Self {
        Self(
            form_urlencoded::parse(req.query_string().as_bytes())
                .into_owned()
                .collect(),
        )
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name` (comma-separated values are split too).
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, v)| v.split(','))
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Every value of `name`, as [`Self::all`], at most
    /// [`domain::query::MAX_FILTER_VALUES`] of them.
    ///
    /// # Errors
    /// 400 naming the parameter and the limit.
    pub fn list(&self, name: &str) -> Result<Vec<String>, ApiError> {
        let values = self.all(name);
        domain::query::at_most(name, values.len()).map_err(|e| ApiError::invalid(e.0))?;
        Ok(values)
    }

    /// A boolean flag parameter (`true`/`1`/`false`/`0`, the words in any case: the original's
    /// Python client writes `True` and `False`).
    ///
    /// # Errors
    /// 400 for another value.
    pub fn flag(&self, name: &str, default: bool) -> Result<bool, ApiError> {
        // Given twice, which one was meant is a guess: `dryRun=false&dryRun=true` must not write.
        if self.0.iter().filter(|(key, _)| key == name).count() > 1 {
            return Err(ApiError::invalid(format!(
                "{name} is given more than once; give it once"
            )));
        }
        match self.get(name) {
            None => Ok(default),
            Some(word) if word == "1" || word.eq_ignore_ascii_case("true") => Ok(true),
            Some(word) if word == "0" || word.eq_ignore_ascii_case("false") => Ok(false),
            Some(other) => Err(ApiError::invalid(format!(
                "{name} must be true, false, 1 or 0, not '{other}'"
            ))),
        }
    }
}

/// The OpenAPI description of the `dryRun` query parameter of flag and segment `PATCH`.
pub const DRY_RUN_DESCRIPTION: &str = "`true` (or `1`): validate and apply the change inside a transaction that is then rolled back, and answer with the result it would have: the same status and body as the real call (`_version` and `version`s as they would be), or the same error. Nothing is stored: no version changes, no audit entry, no webhook delivery. `lastModified` (and `archivedDate`/`deprecatedDate` where the change sets them) is the time of the dry run, and `_id`s the change would assign are generated again by the real call. Default `false`; any value other than `true`, `false` (in any case), `1` or `0`, or the parameter given twice, is a 400 naming it.";

/// Reads an optional `expiry` query parameter (epoch ms).
///
/// # Errors
/// 400 when it is not an integer.
pub fn expiry_param(req: &HttpRequest) -> Result<Option<i64>, ApiError> {
    QueryParams::of(req)
        .get("expiry")
        .map(|v| {
            v.trim().parse::<i64>().map_err(|_| {
                ApiError::invalid(format!("expiry must be epoch milliseconds, not '{v}'"))
            })
        })
        .transpose()
}
