//! An environment's segments: the list (search, paging) and one segment (its targets, its rules
//! as sentences, and the flags that use it).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::environment::Environment;
use domain::query::{Direction, SegmentQuery, SegmentSortField, Sort};
use domain::segment::{Segment, SegmentTarget};
use maud::{html, Markup};
use serde::Deserialize;
use service::use_case;
use service::{ProjectWithEnvironments, SegmentPage, SegmentWithFlags};

use crate::pages::{bad_input, count_line, layout, page_of, pager, search_form, search_page_link};
use crate::session;
use crate::signed::{call, has_control, Signed};
use crate::text::{clause_text, encode, utc};
use crate::{error_page, page, Console};

/// Keys shown per target list before "and N more".
const KEYS_SHOWN: usize = 50;

/// The segment list's query string.
#[derive(Debug, Deserialize)]
pub(crate) struct SegmentsQuery {
    q: Option<String>,
    page: Option<u64>,
}

/// The address of an environment's segments.
fn segments_link(project: &str, env: &str) -> String {
    format!(
        "/projects/{}/environments/{}/segments",
        encode(project),
        encode(env)
    )
}

/// The environment `env` of `project`.
fn environment_of<'a>(project: &'a ProjectWithEnvironments, env: &str) -> Option<&'a Environment> {
    project
        .environments
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|e| e.key.as_str() == env)
}

/// The page saying `project` has no environment `env`.
fn no_environment(signed: &Signed, project: &ProjectWithEnvironments, env: &str) -> HttpResponse {
    page(
        StatusCode::NOT_FOUND,
        crate::pages::message_page(
            "Not found (404)",
            &format!(
                "Project '{}' has no environment '{env}'.",
                project.project.key.as_str()
            ),
            Some(signed),
        ),
    )
}

/// `GET /projects/{project}/environments/{env}/segments`.
pub(crate) async fn list(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String)>,
    query: web::Query<SegmentsQuery>,
) -> HttpResponse {
    let signed = match session::require(&req, &console).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let (project_key, env_key) = path.into_inner();
    let SegmentsQuery { q, page: number } = query.into_inner();
    let search = q.map(|q| q.trim().to_owned()).filter(|q| !q.is_empty());
    if [Some(&project_key), Some(&env_key), search.as_ref()]
        .into_iter()
        .flatten()
        .any(|t| has_control(t))
    {
        return bad_input(
            &signed,
            "A key or search must not contain control characters.",
        );
    }
    let (number, page_range) = page_of(number);
    let segment_query = SegmentQuery {
        query: search.clone(),
        tags: vec![],
        sort: Sort {
            field: SegmentSortField::Name,
            direction: Direction::Ascending,
        },
        page: page_range,
    };
    let caller = signed.caller.clone();
    let (p, e) = (project_key.clone(), env_key.clone());
    let loaded = call(&console, move |s| {
        let project = s
            .projects()
            .get_project(&caller.may(use_case::GetProject)?, &p, true)?;
        let segments = s.segments().list_segments(
            &caller.may(use_case::ListSegments)?,
            &p,
            &e,
            &segment_query,
        )?;
        Ok((project, segments))
    })
    .await;
    match loaded {
        Ok((project, segments)) => match environment_of(&project, &env_key) {
            Some(env) => page(
                StatusCode::OK,
                segment_list_page(&signed, &project, env, &segments, search.as_deref(), number),
            ),
            None => no_environment(&signed, &project, &env_key),
        },
        Err(err) => error_page(&err, Some(&signed)),
    }
}

/// `GET /projects/{project}/environments/{env}/segments/{segment}`.
pub(crate) async fn show(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String, String)>,
) -> HttpResponse {
    let signed = match session::require(&req, &console).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let (project_key, env_key, segment_key) = path.into_inner();
    if [&project_key, &env_key, &segment_key]
        .iter()
        .any(|t| has_control(t))
    {
        return bad_input(&signed, "A key must not contain control characters.");
    }
    let caller = signed.caller.clone();
    let (p, e) = (project_key.clone(), env_key.clone());
    let loaded = call(&console, move |s| {
        let project = s
            .projects()
            .get_project(&caller.may(use_case::GetProject)?, &p, true)?;
        let segment =
            s.segments()
                .get_segment(&caller.may(use_case::GetSegment)?, &p, &e, &segment_key)?;
        Ok((project, segment))
    })
    .await;
    match loaded {
        Ok((project, segment)) => match environment_of(&project, &env_key) {
            Some(env) => page(
                StatusCode::OK,
                segment_page(&signed, &project, env, &segment),
            ),
            None => no_environment(&signed, &project, &env_key),
        },
        Err(err) => error_page(&err, Some(&signed)),
    }
}

/// The other environments of the project, as links to their segments.
fn environment_links(project: &ProjectWithEnvironments, current: &Environment) -> Markup {
    let project_key = project.project.key.as_str();
    html! {
        nav.envs aria-label="Environments" {
            "Environment: "
            @for env in project.environments.as_deref().unwrap_or_default() {
                @if env.key == current.key {
                    strong aria-current="page" { (env.name) }
                } @else {
                    a href=(segments_link(project_key, env.key.as_str())) { (env.name) }
                }
                " "
            }
        }
    }
}

/// The segment list page.
pub(crate) fn segment_list_page(
    signed: &Signed,
    project: &ProjectWithEnvironments,
    env: &Environment,
    segments: &SegmentPage,
    search: Option<&str>,
    number: u64,
) -> Markup {
    let project_key = project.project.key.as_str();
    let base = segments_link(project_key, env.key.as_str());
    let content = html! {
        nav.crumbs aria-label="Breadcrumb" {
            a href="/projects" { "Projects" } " / "
            a href={ "/projects/" (encode(project_key)) "/flags" } { (project.project.name) } " / "
            "Segments of " (env.name)
        }
        h1 { "Segments" }
        (environment_links(project, env))
        (search_form(&base, "Search segments", "name, key or description", search))
        (count_line(segments.total, "segment"))
        table {
            thead {
                tr {
                    th scope="col" { "Segment" }
                    th scope="col" { "Tags" }
                    th scope="col" { "Included" }
                    th scope="col" { "Excluded" }
                    th scope="col" { "Rules" }
                    th scope="col" { "Last changed" }
                }
            }
            tbody {
                @for segment in &segments.items {
                    tr {
                        td {
                            a href={ (base) "/" (encode(segment.key.as_str())) } { (segment.name) }
                            br; span.key.muted { (segment.key.as_str()) }
                        }
                        td { @for tag in &segment.tags { span.badge { (tag) } " " } }
                        td { (included_count(segment)) }
                        td { (excluded_count(segment)) }
                        td { (segment.rules.len()) }
                        td { (utc(segment.last_modified_date)) }
                    }
                }
            }
        }
        (pager(segments.total, number, |n| search_page_link(&base, search, n)))
    };
    layout(
        &format!("Segments of {} in {}", env.name, project.project.name),
        Some(signed),
        &content,
    )
}

fn included_count(segment: &Segment) -> usize {
    segment.included.len()
        + segment
            .included_contexts
            .iter()
            .map(|t| t.values.len())
            .sum::<usize>()
}

fn excluded_count(segment: &Segment) -> usize {
    segment.excluded.len()
        + segment
            .excluded_contexts
            .iter()
            .map(|t| t.values.len())
            .sum::<usize>()
}

/// Keys of one context kind, the first [`KEYS_SHOWN`] of them.
fn keys(kind: &str, values: &[String]) -> Markup {
    html! {
        div {
            span.muted { (kind) ": " }
            (values.iter().take(KEYS_SHOWN).cloned().collect::<Vec<_>>().join(", "))
            @if values.len() > KEYS_SHOWN { " and " (values.len() - KEYS_SHOWN) " more" }
        }
    }
}

/// User keys and the keys of other context kinds.
fn targets(users: &[String], contexts: &[SegmentTarget]) -> Markup {
    html! {
        @if users.is_empty() && contexts.iter().all(|t| t.values.is_empty()) { span.muted { "none" } }
        @if !users.is_empty() { (keys("user", users)) }
        @for target in contexts {
            @if !target.values.is_empty() { (keys(&target.context_kind, &target.values)) }
        }
    }
}

/// One segment's page.
pub(crate) fn segment_page(
    signed: &Signed,
    project: &ProjectWithEnvironments,
    env: &Environment,
    view: &SegmentWithFlags,
) -> Markup {
    let segment = &view.segment;
    let project_key = project.project.key.as_str();
    let content = html! {
        nav.crumbs aria-label="Breadcrumb" {
            a href="/projects" { "Projects" } " / "
            a href={ "/projects/" (encode(project_key)) "/flags" } { (project.project.name) } " / "
            a href=(segments_link(project_key, env.key.as_str())) { "Segments of " (env.name) } " / "
            (segment.name)
        }
        h1 { (segment.name) " " span.key.muted { (segment.key.as_str()) } }
        p {
            @for tag in &segment.tags { span.badge { (tag) } " " }
            span.muted { "Last changed " (utc(segment.last_modified_date)) }
        }
        @if let Some(description) = segment.description.as_deref().filter(|d| !d.is_empty()) {
            p.description { (description) }
        }
        dl {
            dt { "Included" }
            dd { (targets(&segment.included, &segment.included_contexts)) }
            dt { "Excluded" }
            dd { (targets(&segment.excluded, &segment.excluded_contexts)) }
            dt { "Rules" }
            dd {
                @if segment.rules.is_empty() { span.muted { "none" } }
                ol.rules {
                    @for rule in &segment.rules {
                        li {
                            @if let Some(description) = rule.description.as_deref().filter(|d| !d.is_empty()) {
                                strong { (description) } ": "
                            }
                            "Contexts where "
                            @for (i, clause) in rule.clauses.iter().enumerate() {
                                @if i > 0 { " and " }
                                code { (clause_text(clause)) }
                            }
                            @if let Some(weight) = rule.weight {
                                // Weights are thousandths of a percent (100,000 in all).
                                ", " ((weight as f64) / 1000.0) "% of them"
                                @if let Some(by) = &rule.bucket_by { " (by " (by) ")" }
                            }
                        }
                    }
                }
            }
            dt { "Used by flags" }
            dd {
                @if view.flags.is_empty() { span.muted { "none in this environment" } }
                @for (key, name) in &view.flags {
                    div {
                        a href={ "/projects/" (encode(project_key)) "/flags/" (encode(key)) } { (name) }
                        " " span.key.muted { (key) }
                    }
                }
            }
        }
    };
    layout(&segment.name, Some(signed), &content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::fixture;

    fn production(project: &ProjectWithEnvironments) -> &Environment {
        &project.environments.as_deref().unwrap_or_default()[0]
    }

    #[test]
    fn the_segment_list_counts_targets_and_rules_and_links_each_environment() {
        let fx = fixture();
        let list = SegmentPage {
            items: vec![fx.segment.segment.clone()],
            total: 1,
        };
        let html = segment_list_page(
            &fx.reader,
            &fx.project,
            production(&fx.project),
            &list,
            None,
            1,
        )
        .into_string();
        assert!(html.contains("Beta &lt;testers&gt;"), "escaped: {html}");
        assert!(html.contains(r#"href="/projects/shop/environments/production/segments/beta""#));
        assert!(html.contains(r#"href="/projects/shop/environments/test/segments""#));
        assert!(html.contains("<td>2</td><td>1</td><td>1</td>"), "{html}");
        assert!(html.contains("1 segment<"));
    }

    #[test]
    fn a_segment_reads_its_targets_and_rules() {
        let fx = fixture();
        let html = segment_page(
            &fx.reader,
            &fx.project,
            production(&fx.project),
            &fx.segment,
        )
        .into_string();
        for text in [
            "ann, bob",
            "eve",
            "Early access",
            "user email ends with &quot;@example.com&quot;",
            "25% of them",
            "none in this environment",
        ] {
            assert!(html.contains(text), "{text}: {html}");
        }
    }
}
