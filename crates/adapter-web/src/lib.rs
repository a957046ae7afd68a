//! The flagsvc web console: a second driving adapter beside the REST API, calling the same use
//! cases (never the API over HTTP, never the database).
//!
//! Pages are rendered on the server ([`maud`], checked at compile time) and work without
//! JavaScript for reading; htmx (vendored, embedded) makes the switches update in place.
//!
//! A browser signs in with an access token: the console opens a session in the store
//! ([`service::ConsoleSessions::open_console_session`]) and keeps only its id in an `HttpOnly`,
//! `SameSite=Strict` cookie (`Secure` on https). Every state-changing form carries the session's
//! CSRF token, and a request from another origin is refused whatever it carries.

mod admin;
mod console;
mod explain;
#[cfg(test)]
mod fixtures;
mod flag_edit;
mod flag_page;
mod flags;
mod history;
mod pages;
mod projects;
mod segments;
mod session;
mod signed;
mod text;

use actix_web::http::header::{self};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};

pub use console::{Console, SignInThrottle};
use pages::{error_page, page, see_other, status_of};
pub use session::{SESSION_COOKIE, SESSION_PATH};

impl Console {
    /// Registers the console's routes (at `/`, beside `/api/v2`) on `routes`.
    pub fn configure(&self, routes: &mut web::ServiceConfig) {
        routes
            .app_data(web::Data::new(self.clone()))
            .service(page_at("/").get(home))
            .service(page_at("/static/htmx.min.js").get(htmx_js))
            .service(page_at("/static/console.css").get(console_css))
            .service(
                page_at("/sign-in")
                    .get(session::sign_in_page)
                    .post(session::sign_in),
            )
            .service(page_at("/sign-out").get(home).post(session::sign_out))
            .service(page_at("/projects").get(projects::projects))
            .service(page_at("/members").get(admin::members))
            .service(
                page_at("/tokens")
                    .get(admin::tokens)
                    .post(admin::create_token),
            )
            .service(
                page_at("/tokens/{id}/delete")
                    .get(|| async { see_other("/tokens") })
                    .post(admin::delete_token),
            )
            .service(page_at("/projects/{project}").get(projects::project))
            .service(page_at("/projects/{project}/flags").get(flags::list))
            .service(page_at("/projects/{project}/flags/{flag}").get(flag_page::show))
            .service(
                page_at("/projects/{project}/flags/{flag}/settings")
                    .app_data(form_config_up_to(SETTINGS_FORM_LIMIT))
                    .get(flag_edit::to_flag_page)
                    .post(flag_edit::save_settings),
            )
            .service(
                page_at("/projects/{project}/flags/{flag}/archived")
                    .get(flag_edit::to_flag_page)
                    .post(flag_edit::save_archived),
            )
            .service(
                page_at("/projects/{project}/flags/{flag}/copy")
                    .get(flag_edit::to_flag_page)
                    .post(flag_edit::copy_config),
            )
            .service(
                page_at("/projects/{project}/flags/{flag}/environments/{env}/serving")
                    .get(flag_edit::to_flag_page)
                    .post(flag_edit::save_serving),
            )
            .service(
                page_at("/projects/{project}/flags/{flag}/environments/{env}/targeting")
                    .get(flag_edit::to_flag_page)
                    .post(flags::switch_targeting),
            )
            .service(page_at("/projects/{project}/flags/{flag}/history").get(history::show))
            .service(
                page_at("/projects/{project}/flags/{flag}/explain")
                    .app_data(form_config_up_to(EXPLAIN_FORM_LIMIT))
                    .get(explain::show)
                    .post(explain::evaluate),
            )
            .service(page_at("/projects/{project}/environments/{env}/segments").get(segments::list))
            .service(
                page_at("/projects/{project}/environments/{env}/segments/{segment}")
                    .get(segments::show),
            );
    }
}

impl Console {
    /// The page for an address outside the API that the console does not have (404).
    pub fn not_found(&self, req: &HttpRequest) -> HttpResponse {
        page(
            StatusCode::NOT_FOUND,
            pages::message_page(
                "Page not found (404)",
                &format!("There is no page at {}.", req.path()),
                None,
            ),
        )
    }
}

/// A console address: its forms and query strings read as the console reads them, and a
/// method it does not take answered with a page (405), not the API's JSON.
fn page_at(path: &str) -> actix_web::Resource {
    web::resource(path)
        .app_data(form_config())
        .app_data(query_config())
        .default_service(web::to(wrong_method))
}

/// A request with a method the address does not take.
async fn wrong_method(req: HttpRequest) -> HttpResponse {
    page(
        StatusCode::METHOD_NOT_ALLOWED,
        pages::message_page(
            "Method not allowed (405)",
            &format!("{} does not take a {} request.", req.path(), req.method()),
            None,
        ),
    )
}

/// The largest form the console accepts: its forms are a few fields.
const FORM_LIMIT: usize = 16 * 1024;

/// A form that cannot be read is answered with a page that says so.
fn form_config() -> web::FormConfig {
    form_config_up_to(FORM_LIMIT)
}

/// The largest settings form: it carries a flag's whole description, which can be as long as
/// the API takes (its bodies' default limit, 1 MiB), percent-encoded (three bytes for each
/// byte of text that is not ASCII), with the form's other fields.
const SETTINGS_FORM_LIMIT: usize = 3 * 1024 * 1024 + FORM_LIMIT;

/// The largest "test a context" form: a context as large as OFREP takes (256 KiB),
/// percent-encoded, with the form's other fields.
const EXPLAIN_FORM_LIMIT: usize = 3 * 256 * 1024 + FORM_LIMIT;

/// [`form_config`] for forms of up to `limit` bytes.
fn form_config_up_to(limit: usize) -> web::FormConfig {
    web::FormConfig::default()
        .limit(limit)
        .error_handler(|err, _| {
            let answer = page(
                StatusCode::BAD_REQUEST,
                pages::message_page(
                    "Bad request",
                    &format!("The form could not be read: {err}"),
                    None,
                ),
            );
            actix_web::error::InternalError::from_response(err, answer).into()
        })
}

/// A query string that cannot be read is answered with a page that says so.
fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, _| {
        let answer = page(
            StatusCode::BAD_REQUEST,
            pages::message_page(
                "Bad request",
                &format!("The address's query could not be read: {err}"),
                None,
            ),
        );
        actix_web::error::InternalError::from_response(err, answer).into()
    })
}

/// htmx 2.0.11, vendored (see `static/README.md`).
const HTMX_JS: &str = include_str!("../static/htmx.min.js");
/// The console's stylesheet.
const CONSOLE_CSS: &str = include_str!("../static/console.css");

/// Static files change only with the binary: cached for a day, revalidated after.
fn static_file(content_type: &'static str, body: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, content_type))
        .insert_header((header::CACHE_CONTROL, "public, max-age=86400"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(body)
}

async fn htmx_js() -> HttpResponse {
    static_file("text/javascript; charset=utf-8", HTMX_JS)
}

async fn console_css() -> HttpResponse {
    static_file("text/css; charset=utf-8", CONSOLE_CSS)
}

/// `/`: the projects when signed in, else the sign-in page.
async fn home(req: HttpRequest, console: web::Data<Console>) -> HttpResponse {
    match session::current(&req, &console).await {
        Ok(Some(_)) => see_other("/projects"),
        Ok(None) => see_other("/sign-in"),
        Err(err) => error_page(&err, None),
    }
}
