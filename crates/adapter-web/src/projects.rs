//! The projects pages: every project with its environments, and one project.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::query::{Direction, ProjectQuery, ProjectSortField, Sort};
use maud::{html, Markup};
use serde::Deserialize;
use service::use_case;
use service::ProjectList;

use crate::pages::{
    bad_input, count_line, layout, page_of, pager, search_form, search_page_link, swatch,
};
use crate::session;
use crate::signed::{call, has_control, Signed};
use crate::text::encode;
use crate::{error_page, page, Console};

/// The projects page's query string.
#[derive(Debug, Deserialize)]
pub(crate) struct ProjectsQuery {
    q: Option<String>,
    page: Option<u64>,
}

/// `GET /projects`: every project with its environments.
pub(crate) async fn projects(
    req: HttpRequest,
    console: web::Data<Console>,
    query: web::Query<ProjectsQuery>,
) -> HttpResponse {
    let signed = match session::require(&req, &console).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let ProjectsQuery { q, page: number } = query.into_inner();
    let search = q.map(|q| q.trim().to_owned()).filter(|q| !q.is_empty());
    if search.as_deref().is_some_and(has_control) {
        return bad_input(&signed, "A search must not contain control characters.");
    }
    let (number, page_range) = page_of(number);
    let projects_query = ProjectQuery {
        query: search.clone(),
        tags: vec![],
        keys: vec![],
        sort: Sort {
            field: ProjectSortField::Name,
            direction: Direction::Ascending,
        },
        page: page_range,
    };
    let caller = signed.caller.clone();
    match call(&console, move |s| {
        s.projects()
            .list_projects(&caller.may(use_case::ListProjects)?, &projects_query, true)
    })
    .await
    {
        Ok(list) => page(
            StatusCode::OK,
            projects_page(&signed, &list, search.as_deref(), number),
        ),
        Err(err) => error_page(&err, Some(&signed)),
    }
}

/// `GET /projects/{project}`: the project's flags.
pub(crate) async fn project(path: web::Path<String>) -> HttpResponse {
    crate::see_other(&format!("/projects/{}/flags", encode(&path.into_inner())))
}

/// The projects page from `list` (page `number`, matching `search`).
pub(crate) fn projects_page(
    signed: &Signed,
    list: &ProjectList,
    search: Option<&str>,
    number: u64,
) -> Markup {
    let content = html! {
        h1 { "Projects" }
        (search_form("/projects", "Search projects", "name or key", search))
        (count_line(list.total, "project"))
        @for item in &list.items {
            section {
                h2 {
                    a href={ "/projects/" (encode(item.project.key.as_str())) "/flags" } { (item.project.name) }
                    " " span.key.muted { (item.project.key.as_str()) }
                }
                table {
                    thead { tr { th scope="col" { "Environment" } th scope="col" { "Key" } th scope="col" { "Colour" } th scope="col" { "Critical" } th scope="col" { "Changes" } th scope="col" { "Segments" } } }
                    tbody {
                        @for env in item.environments.as_deref().unwrap_or_default() {
                            tr {
                                td { (env.name) }
                                td.key { (env.key.as_str()) }
                                td { (swatch(env)) " " code { "#" (env.color) } }
                                td { @if env.critical { span.badge.critical { "critical" } } @else { span.muted { "no" } } }
                                td {
                                    @if env.critical || env.confirm_changes { span.badge { "confirmed first" } " " }
                                    @if env.require_comments { span.badge { "comment required" } }
                                    @if !(env.critical || env.confirm_changes || env.require_comments) { span.muted { "no rules" } }
                                }
                                td { a href={ "/projects/" (encode(item.project.key.as_str())) "/environments/" (encode(env.key.as_str())) "/segments" } { "Segments" span.visually-hidden { " of " (env.name) } } }
                            }
                        }
                    }
                }
            }
        }
        (pager(list.total, number, |n| search_page_link("/projects", search, n)))
    };
    layout("Projects", Some(signed), &content)
}
