//! The pages: a layout, and one function per page that renders it from what the use cases
//! returned (so each renders from fixture data in the tests).

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use domain::query::Page;
use maud::{html, Markup, DOCTYPE};
use service::ServiceError;

use crate::signed::Signed;
use crate::text::encode;
use actix_web::http::header::{self, HeaderValue};

/// Items per page of a list (projects, flags, segments, members, tokens).
pub(crate) const PER_PAGE: u32 = 50;

/// The frame of every page: the top bar (with who is signed in and sign-out), then `content`.
pub(crate) fn layout(title: &str, signed: Option<&Signed>, content: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                // htmx must not inject its indicator styles: the page allows no inline style.
                meta name="htmx-config" content=r#"{"includeIndicatorStyles":false}"#;
                title { (title) " · flagsvc" }
                link rel="stylesheet" href="/static/console.css";
                script src="/static/htmx.min.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "flagsvc" }
                    @if let Some(signed) = signed {
                        nav aria-label="Main" {
                            a href="/projects" { "Projects" }
                            a href="/members" { "Members" }
                            @if crate::signed::manages_tokens(signed) { a href="/tokens" { "Access tokens" } }
                        }
                        span.who { "Signed in with token " strong { (signed.caller.token_name().unwrap_or_default()) } " (" (signed.caller.role().as_str()) ")" }
                        form.inline method="post" action="/sign-out" {
                            input type="hidden" name="csrf" value=(signed.csrf_token);
                            button.plain type="submit" { "Sign out" }
                        }
                    }
                }
                main { (content) }
            }
        }
    }
}

/// The sign-in page, with `problem` said above the form.
pub(crate) fn sign_in(problem: Option<&str>) -> Markup {
    let content = html! {
        section.sign-in {
            h1 { "Sign in" }
            p { "Sign in with an API access token. Its role decides what you can see and change here, as in the API." }
            @if let Some(problem) = problem {
                p.message.error role="alert" { (problem) }
            }
            form method="post" action="/sign-in" {
                label for="token" { "Access token" }
                input #token type="password" name="token" autocomplete="current-password" required autofocus;
                p { button type="submit" { "Sign in" } }
            }
            p.muted { "On a new installation, the token is the one given with " code { "--bootstrap-token" } " (or printed in the server's log at first start)." }
        }
    };
    layout("Sign in", None, &content)
}

/// A page that says one thing.
pub(crate) fn message_page(title: &str, message: &str, signed: Option<&Signed>) -> Markup {
    let content = html! {
        h1 { (title) }
        p.message.error role="alert" { (message) }
        p { a href="/projects" { "Back to the projects" } }
    };
    layout(title, signed, &content)
}

/// A use case's refusal or failure, said plainly.
pub(crate) fn error(err: &ServiceError, status: StatusCode, signed: Option<&Signed>) -> Markup {
    let (title, message) = match err {
        ServiceError::NotPermitted(_) => ("Not permitted", err.to_string()),
        ServiceError::NotFound(_) => ("Not found", err.to_string()),
        ServiceError::VersionConflict(_) => (
            "Changed meanwhile",
            format!("{err}. Someone else changed it since this page was loaded: reload the page to see the current state, then try again."),
        ),
        ServiceError::Unavailable(_) => (
            "Unavailable",
            "The database cannot be reached just now; try again in a moment.".to_owned(),
        ),
        ServiceError::Internal(_) => {
            log::error!("console: internal error: {err}");
            (
                "Something went wrong",
                "Something went wrong on the server; its log has the details.".to_owned(),
            )
        }
        _ => ("Refused", err.to_string()),
    };
    message_page(&format!("{title} ({})", status.as_u16()), &message, signed)
}

/// A 400 page saying what is wrong with the request.
pub(crate) fn bad_input(signed: &Signed, message: &str) -> HttpResponse {
    page(
        StatusCode::BAD_REQUEST,
        message_page("Bad request", message, Some(signed)),
    )
}

/// An environment's colour, as a small square (an SVG's presentation attribute, not a style:
/// the pages allow no inline style).
pub(crate) fn swatch(env: &domain::environment::Environment) -> Markup {
    html! {
        svg.swatch width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" {
            rect width="12" height="12" rx="2" fill={ "#" (env.color) } {}
        }
    }
}

/// Page `number` of list `base` searched for `search`.
pub(crate) fn search_page_link(base: &str, search: Option<&str>, number: u64) -> String {
    match search {
        Some(search) => format!("{base}?q={}&page={number}", encode(search)),
        None => format!("{base}?page={number}"),
    }
}

/// Page `number` of a list (1-based; none: the first), and that page for the store.
pub(crate) fn page_of(number: Option<u64>) -> (u64, Page) {
    let number = number.unwrap_or(1).max(1);
    (
        number,
        Page {
            limit: PER_PAGE,
            offset: (number - 1).saturating_mul(u64::from(PER_PAGE)),
        },
    )
}

/// The links between the pages of a list of `total` items shown at page `number` (each page's
/// address by `link`), and what a page past the end has.
pub(crate) fn pager(total: u64, number: u64, link: impl Fn(u64) -> String) -> Markup {
    let pages = total.div_ceil(u64::from(PER_PAGE)).max(1);
    html! {
        @if number > pages {
            p { "There is no page " (number) " of this list. " a href=(link(1)) { "Go to the first page" } }
        }
        @if pages > 1 {
            nav aria-label="Pages" {
                @if number > 1 { a href=(link(number - 1)) { "Previous" } " " }
                span { "Page " (number) " of " (pages) }
                @if number < pages { " " a href=(link(number + 1)) { "Next" } }
            }
        }
    }
}

/// A list's search box, sent to `base` as `q`.
pub(crate) fn search_form(
    base: &str,
    label: &str,
    placeholder: &str,
    search: Option<&str>,
) -> Markup {
    html! {
        form method="get" action=(base) role="search" {
            label for="q" { (label) }
            input #q type="search" name="q" value=(search.unwrap_or("")) placeholder=(placeholder);
            " " button type="submit" { "Search" }
        }
    }
}

/// How many items a list has in all: `3 flags`, `1 flag`.
pub(crate) fn count_line(total: u64, noun: &str) -> Markup {
    html! { p.muted { (total) " " (noun) @if total != 1 { "s" } } }
}

/// A redirect that a form's POST follows with a GET.
pub(crate) fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .finish()
}

/// The headers of every page: no caching (pages show a signed-in member's data), no framing,
/// scripts and styles from this origin only.
pub(crate) fn page(status: StatusCode, body: maud::Markup) -> HttpResponse {
    let mut response = HttpResponse::build(status);
    response
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "same-origin"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                 connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            ),
        ));
    response.body(body.into_string())
}

/// What a failed use case looks like in the console: its status, and a page that says why.
pub(crate) fn error_page(err: &ServiceError, signed_in: Option<&Signed>) -> HttpResponse {
    let status = status_of(err);
    page(status, error(err, status, signed_in))
}

/// The status of a failed use case's answer.
pub(crate) fn status_of(err: &ServiceError) -> StatusCode {
    match err {
        ServiceError::Invalid { .. }
        | ServiceError::DuplicateEmail(_)
        | ServiceError::EmailTaken(_) => StatusCode::BAD_REQUEST,
        ServiceError::Unauthenticated(_) | ServiceError::NotAnAccessToken(_) => {
            StatusCode::UNAUTHORIZED
        }
        ServiceError::NotPermitted(_) => StatusCode::FORBIDDEN,
        ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
        ServiceError::KeyTaken(_)
        | ServiceError::VersionConflict(_)
        | ServiceError::StillReferenced(_)
        | ServiceError::WrongState(_) => StatusCode::CONFLICT,
        ServiceError::PatchFailed(_) => StatusCode::UNPROCESSABLE_ENTITY,
        ServiceError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        ServiceError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use service::ProjectList;

    use super::*;
    use crate::fixtures::fixture;
    use crate::projects::projects_page;

    #[test]
    fn the_sign_in_page_asks_for_a_token_and_says_what_was_wrong() {
        let html = sign_in(Some("That is not a valid access token.")).into_string();
        assert!(html.contains(r#"type="password" name="token""#));
        assert!(html.contains(r#"role="alert""#));
        assert!(!html.contains("Sign out"), "nobody is signed in");
    }

    #[test]
    fn the_projects_page_lists_environments_and_who_is_signed_in() {
        let fx = fixture();
        let list = ProjectList {
            items: vec![fx.project.clone()],
            total: 1,
        };
        let html = projects_page(&fx.owner, &list, None, 1).into_string();
        for text in [
            "Shop",
            "production",
            "Production",
            "critical",
            "#00FF00",
            "1 project<",
            "Sign out",
            "(owner)",
            "confirmed first",
            "no rules",
        ] {
            assert!(html.contains(text), "{text}: {html}");
        }
        assert!(html.contains(r#"href="/projects/shop/flags""#));
    }

    #[test]
    fn errors_are_said_plainly_and_internal_ones_hide_their_cause() {
        let fx = fixture();
        let conflict = ServiceError::VersionConflict("version 3, not 2".into());
        let html = error(&conflict, StatusCode::CONFLICT, Some(&fx.owner)).into_string();
        assert!(html.contains("Changed meanwhile (409)"));
        let internal = ServiceError::Internal("secret detail of the database".into());
        let html = error(&internal, StatusCode::INTERNAL_SERVER_ERROR, None).into_string();
        assert!(!html.contains("secret detail"));
        assert!(html.contains("Something went wrong"));
    }

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
