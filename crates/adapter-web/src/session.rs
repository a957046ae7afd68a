//! Signing in and out, the session cookie, and the checks every state-changing request passes.

use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::header;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use service::{ServiceError, CONSOLE_SESSION_TTL_MS};

use crate::signed::{call, check_form, from_htmx, has_control, same_origin, Signed};
use crate::{error_page, page, pages, see_other, Console};

/// The cookie that names the browser's session.
pub const SESSION_COOKIE: &str = "flagsvc_session";

/// The path the cookie is sent on: the whole site (the API ignores it; it reads only
/// `Authorization`).
pub const SESSION_PATH: &str = "/";

/// The session the request's cookie names, if it is open.
pub(crate) async fn current(
    req: &HttpRequest,
    console: &Console,
) -> Result<Option<Signed>, ServiceError> {
    let Some(id) = req.cookie(SESSION_COOKIE).map(|c| c.value().to_owned()) else {
        return Ok(None);
    };
    // A cookie that cannot be a session id is no session: the store is not asked.
    if !is_session_id(&id) {
        return Ok(None);
    }
    Ok(
        call(console, move |s| s.console_sessions().console_session(&id))
            .await?
            .map(Signed::from),
    )
}

/// Whether `id` can be a session id: 64 hex characters.
fn is_session_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The signed-in caller, or the answer to give instead: the sign-in page for a request without
/// an open session, an error page when the store fails.
pub(crate) async fn require(req: &HttpRequest, console: &Console) -> Result<Signed, HttpResponse> {
    match current(req, console).await {
        Ok(Some(signed)) => Ok(signed),
        // htmx would follow a redirect and put the sign-in page in place of a switch: it is told
        // to load the sign-in page instead.
        Ok(None) if from_htmx(req) => Err(HttpResponse::Ok()
            .insert_header(("HX-Redirect", "/sign-in"))
            .finish()),
        Ok(None) => Err(see_other("/sign-in")),
        Err(err) => Err(error_page(&err, None)),
    }
}

/// The answer to a state-changing request that failed [`check_form`]: htmx is told to reload
/// the page (a page of an earlier session, whose CSRF token is stale, gets the current one).
pub(crate) fn forged_from(req: &HttpRequest, signed: &Signed) -> HttpResponse {
    if from_htmx(req) && same_origin(req) {
        return HttpResponse::Ok()
            .insert_header(("HX-Refresh", "true"))
            .finish();
    }
    forged(Some(signed))
}

/// The page said to a state-changing request that failed [`check_form`].
pub(crate) fn forged(signed: Option<&Signed>) -> HttpResponse {
    page(
        StatusCode::FORBIDDEN,
        pages::message_page(
            "Request refused",
            "This form was not sent by this console's page (its security token is missing, \
             stale or from another site). Reload the page and try again.",
            signed,
        ),
    )
}

/// Whether the browser reached us over https (directly, or as a proxy in front says).
fn over_https(req: &HttpRequest) -> bool {
    req.connection_info().scheme() == "https"
}

fn session_cookie(req: &HttpRequest, value: String, max_age_secs: i64) -> Cookie<'static> {
    Cookie::build(SESSION_COOKIE, value)
        .path(SESSION_PATH)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(over_https(req))
        .max_age(actix_web::cookie::time::Duration::seconds(max_age_secs))
        .finish()
}

/// `GET /sign-in`.
pub(crate) async fn sign_in_page(req: HttpRequest, console: web::Data<Console>) -> HttpResponse {
    match current(&req, &console).await {
        Ok(Some(_)) => see_other("/projects"),
        _ => page(StatusCode::OK, pages::sign_in(None)),
    }
}

/// The sign-in form.
#[derive(Debug, Deserialize)]
pub(crate) struct SignInForm {
    token: String,
}

/// `POST /sign-in`: opens a session for the token and sets its cookie.
pub(crate) async fn sign_in(
    req: HttpRequest,
    console: web::Data<Console>,
    form: web::Form<SignInForm>,
) -> HttpResponse {
    // No session yet, so no CSRF token: a form posted from another site (which would sign the
    // victim in as the attacker) is refused by its origin.
    if !same_origin(&req) {
        return page(
            StatusCode::FORBIDDEN,
            pages::sign_in(Some(
                "This sign-in was not sent from this console's page (it came from another site). \
                 Sign in here instead.",
            )),
        );
    }
    let secret = form.into_inner().token.trim().to_owned();
    if let Some(wait) = console.throttle.as_ref().and_then(|t| t.blocked(&req)) {
        // As the API does: others' failures from this address do not lock out a generated
        // secret (unguessable) that is a token's, decided without a lookup per guess.
        let admitted = service::is_generated_secret(&secret) && {
            let (service, secret) = (console.service.clone(), secret.clone());
            web::block(move || service.authentication().may_be_a_token(&secret))
                .await
                .is_ok_and(|known| known.unwrap_or(false))
        };
        if admitted {
            return signed_in(req, console, secret).await;
        }
        let secs = wait.as_secs().max(1);
        let mut answer = page(
            StatusCode::TOO_MANY_REQUESTS,
            pages::sign_in(Some(&format!(
                "Too many failed sign-ins from this address; try again in {secs} s."
            ))),
        );
        if let Ok(value) = header::HeaderValue::from_str(&secs.to_string()) {
            answer.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return answer;
    }
    signed_in(req, console, secret).await
}

/// Signs in with `secret`, its client not (or no longer) throttled.
async fn signed_in(req: HttpRequest, console: web::Data<Console>, secret: String) -> HttpResponse {
    if secret.is_empty() {
        return page(
            StatusCode::BAD_REQUEST,
            pages::sign_in(Some("Enter an access token.")),
        );
    }
    // A token is printable text; anything else is no token (and is not sent to the store).
    let refused = || {
        page(
            StatusCode::UNAUTHORIZED,
            pages::sign_in(Some(
                "That is not a valid access token. Use an API access token (not an SDK key).",
            )),
        )
    };
    if has_control(&secret) {
        if let Some(throttle) = &console.throttle {
            throttle.failed(&req);
        }
        return refused();
    }
    // A browser that signs in again leaves its previous session.
    let previous = req.cookie(SESSION_COOKIE).map(|c| c.value().to_owned());
    // Only once the new one is open: a failed sign-in leaves the browser signed in as it was.
    match call(&console, move |s| {
        let opened = s.console_sessions().open_console_session(&secret)?;
        if let Some(previous) = previous.filter(|id| is_session_id(id)) {
            s.console_sessions().close_console_session(&previous)?;
        }
        Ok(opened)
    })
    .await
    {
        Ok(opened) => {
            let cookie = session_cookie(&req, opened.id, CONSOLE_SESSION_TTL_MS / 1000);
            let mut answer = see_other("/projects");
            // A cookie's value is 64 hex characters: it always encodes.
            let _ = answer.add_cookie(&cookie);
            answer
        }
        Err(ServiceError::Unauthenticated(_) | ServiceError::NotAnAccessToken(_)) => {
            if let Some(throttle) = &console.throttle {
                throttle.failed(&req);
            }
            refused()
        }
        Err(err) => error_page(&err, None),
    }
}

/// The sign-out form.
#[derive(Debug, Deserialize)]
pub(crate) struct SignOutForm {
    csrf: Option<String>,
}

/// `POST /sign-out`: ends the session and clears its cookie.
pub(crate) async fn sign_out(
    req: HttpRequest,
    console: web::Data<Console>,
    form: web::Form<SignOutForm>,
) -> HttpResponse {
    let signed = match require(&req, &console).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if !check_form(&req, &signed, form.csrf.as_deref()) {
        return forged(Some(&signed));
    }
    let Some(id) = req.cookie(SESSION_COOKIE).map(|c| c.value().to_owned()) else {
        return see_other("/sign-in");
    };
    if let Err(err) = call(&console, move |s| {
        s.console_sessions().close_console_session(&id)
    })
    .await
    {
        return error_page(&err, Some(&signed));
    }
    let mut answer = see_other("/sign-in");
    let _ = answer.add_cookie(&session_cookie(&req, String::new(), 0));
    answer
}

/// The signed-in caller and the project and flag keys of a flag's page, or the answer to give
/// instead (sign-in, or 400 for a key with control characters).
pub(crate) async fn flag_page_request(
    req: &HttpRequest,
    console: &Console,
    path: web::Path<(String, String)>,
) -> Result<(Signed, String, String), HttpResponse> {
    let signed = require(req, console).await?;
    let (project_key, flag_key) = path.into_inner();
    if has_control(&project_key) || has_control(&flag_key) {
        return Err(pages::bad_input(
            &signed,
            "A key must not contain control characters.",
        ));
    }
    Ok((signed, project_key, flag_key))
}
