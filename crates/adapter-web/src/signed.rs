//! [`Signed`]: the person signed in, and what every handler asks of a request and its form.

use actix_web::http::header;
use actix_web::HttpRequest;
use service::{use_case, Caller, ServiceError, SessionCaller};

use crate::Console;

/// A signed-in request: who acts, and the CSRF token its forms carry.
#[derive(Debug, Clone)]
pub(crate) struct Signed {
    pub(crate) caller: Caller,
    pub(crate) csrf_token: String,
}

impl From<SessionCaller> for Signed {
    fn from(session: SessionCaller) -> Self {
        Self {
            caller: session.caller,
            csrf_token: session.csrf_token,
        }
    }
}

/// Runs a use case on the blocking pool (`driving::run_blocking`: they wait for the database).
pub(crate) async fn call<T: Send + 'static>(
    console: &Console,
    work: impl FnOnce(&service::Service) -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    driving::run_blocking(&console.service, work).await
}

/// Whether htmx sent the request (it then swaps the answer into the page).
pub(crate) fn from_htmx(req: &HttpRequest) -> bool {
    req.headers().contains_key("hx-request")
}

/// Whether `text` holds a control character: no key, search or token does, and PostgreSQL
/// refuses some of them (NUL), so such input is answered before it reaches the store.
pub(crate) fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// Whether the request comes from this site: a browser sends `Origin` with every POST (and
/// `Sec-Fetch-Site` where it can); one from another site is refused, whatever it carries.
pub(crate) fn same_origin(req: &HttpRequest) -> bool {
    if let Some(site) = req.headers().get("sec-fetch-site") {
        if !matches!(site.as_bytes(), b"same-origin" | b"none") {
            return false;
        }
    }
    let Some(origin) = req.headers().get(header::ORIGIN) else {
        return true;
    };
    let Some(host) = req.headers().get(header::HOST) else {
        return false;
    };
    let origin = origin.as_bytes();
    let host = host.as_bytes();
    // `Origin` is `scheme://host[:port]`; the request's `Host` is `host[:port]`.
    [b"http://".as_slice(), b"https://".as_slice()]
        .iter()
        .any(|scheme| origin.strip_prefix(*scheme) == Some(host))
}

/// Whether `given` is the session's CSRF token (compared in constant time).
pub(crate) fn csrf_matches(signed: &Signed, given: &str) -> bool {
    let expected = signed.csrf_token.as_bytes();
    let given = given.as_bytes();
    expected.len() == given.len()
        && expected
            .iter()
            .zip(given)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The checks of a state-changing request: same origin, and the session's CSRF token in the
/// form's `csrf` field (htmx posts the form's fields too).
pub(crate) fn check_form(req: &HttpRequest, signed: &Signed, form_csrf: Option<&str>) -> bool {
    same_origin(req) && form_csrf.is_some_and(|given| csrf_matches(signed, given))
}

/// Whether the caller's role manages access tokens (the service decides each request).
pub(crate) fn manages_tokens(signed: &Signed) -> bool {
    signed.caller.may(use_case::CreateToken).is_ok()
}
