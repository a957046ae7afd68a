//! The SDK key a request presents, and the environment it opens: `Authorization: Bearer <key>`,
//! `Authorization: <key>` (the original's SDKs send the raw key) or `X-API-Key: <key>`.

use std::time::Duration;

use actix_web::HttpRequest;
use service::{SdkAccess, ServiceError};

use crate::gate::Shared;

/// Why a request is not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No key, or one that opens no environment: 401.
    Unauthenticated(String),
    /// Too many failed authentications from the client, or too many requests for the
    /// environment: 429 after `Duration`.
    TooMany(Duration),
    /// The store could not be asked: 503.
    Unavailable(String),
}

/// The key `req` presents, if any: `X-API-Key` first, then `Authorization` (with or without
/// the `Bearer` scheme).
pub(crate) fn presented_key(req: &HttpRequest) -> Option<&str> {
    let header = |name| {
        req.headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
            .filter(|value| !value.is_empty())
    };
    if let Some(key) = header("x-api-key") {
        return Some(key);
    }
    let authorization = header("authorization")?;
    let key = match authorization.split_once(' ') {
        Some((scheme, key)) if scheme.eq_ignore_ascii_case("bearer") => key.trim(),
        // The scheme alone (its key trimmed away) presents none.
        _ if authorization.eq_ignore_ascii_case("bearer") => "",
        _ => authorization,
    };
    (!key.is_empty()).then_some(key)
}

/// The environment the key of `req` opens, counted against the environment's limit on `route`:
/// from memory when this replica remembers the key, else asked of the store (on the blocking
/// pool, throttled per client address like the API's failed authentications, except for keys
/// of the generated form).
pub(crate) async fn admit(
    req: &HttpRequest,
    shared: &Shared,
    route: &str,
) -> Result<SdkAccess, Refusal> {
    let Some(secret) = presented_key(req) else {
        return Err(Refusal::Unauthenticated(
            "an environment's server-side SDK key is required (Authorization or X-API-Key)".into(),
        ));
    };
    let opened = match shared.service.sdk().open_remembered(secret) {
        Some(opened) => opened,
        None => {
            // Others' failures from this address (a NAT, a proxy) do not lock out a key of
            // the generated form: guessing one is hopeless, so looking it up tells nothing.
            if let Some(wait) = shared
                .gate
                .blocked(req)
                .filter(|_| !service::is_generated_sdk_key(secret))
            {
                return Err(Refusal::TooMany(wait));
            }
            let secret = secret.to_owned();
            driving::run_blocking(&shared.service, move |service| service.sdk().open(&secret)).await
        }
    };
    let access = match opened {
        Ok(access) => access,
        Err(ServiceError::Unauthenticated(why)) => {
            shared.gate.failed(req);
            return Err(Refusal::Unauthenticated(why));
        }
        Err(other) => return Err(Refusal::Unavailable(other.to_string())),
    };
    let client = format!("sdk:{}:{}", access.project_key(), access.environment_key());
    if let Some(wait) = shared.gate.count(&client, route).await {
        return Err(Refusal::TooMany(wait));
    }
    Ok(access)
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn the_key_is_read_from_any_of_the_headers_the_clients_send() {
        let key = |headers: &[(&str, &str)]| {
            let mut req = TestRequest::default();
            for header in headers {
                req = req.insert_header(*header);
            }
            presented_key(&req.to_http_request()).map(str::to_owned)
        };
        assert_eq!(key(&[("Authorization", "sdk-1")]), Some("sdk-1".into()));
        assert_eq!(
            key(&[("Authorization", "Bearer sdk-1")]),
            Some("sdk-1".into())
        );
        assert_eq!(
            key(&[("Authorization", "bearer  sdk-1 ")]),
            Some("sdk-1".into())
        );
        assert_eq!(key(&[("X-API-Key", "sdk-2")]), Some("sdk-2".into()));
        assert_eq!(
            key(&[("X-API-Key", "sdk-2"), ("Authorization", "Bearer sdk-1")]),
            Some("sdk-2".into()),
            "X-API-Key first"
        );
        assert_eq!(key(&[]), None);
        assert_eq!(key(&[("Authorization", "Bearer ")]), None);
        assert_eq!(key(&[("X-API-Key", " ")]), None);
    }
}
