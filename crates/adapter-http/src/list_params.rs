//! The descriptions of the list parameters every paged route declares (`limit`, `offset`).

/// `limit` of lists that page by 20.
pub(crate) const LIMIT_20: &str = "Items per page, default 20. The reference gives no maximum: a larger value is served as 100 (the `_links` then carry `limit=100`). 0, a negative or a non-integer value: 400";
/// `limit` of the token list.
pub(crate) const LIMIT_25: &str = "Items per page, default 25. The reference gives no maximum: a larger value is served as 100 (the `_links` then carry `limit=100`). 0, a negative or a non-integer value: 400";
/// `limit` of the flag list.
pub(crate) const LIMIT_FLAGS: &str = "Items per page, default 20 (under `Svc-API-Version: 20220603`, without `limit` every flag is listed). The reference gives no maximum: a larger value is served as 100 (the `_links` then carry `limit=100`). 0, a negative or a non-integer value: 400";
/// `offset` of every paged list.
pub(crate) const OFFSET: &str = "Items to skip, default 0; a negative or non-integer value: 400";
