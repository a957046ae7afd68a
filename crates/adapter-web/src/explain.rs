//! "Test a context" on a flag: a context typed as the SDKs send it, evaluated in one environment,
//! and the evaluation's trace (`service::Evaluations::explain_flag`): prerequisites, targets,
//! each rule and clause with the value the context had, segments, the rollout's bucket. The
//! context travels in a POST body (never in an address) and is evaluated, never stored.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::evaluation::{ClauseTrace, Context, Explanation, RolloutTrace};
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::Value;
use service::{use_case, ProjectWithEnvironments, ServiceError};

use crate::pages::layout;
use crate::session;
use crate::signed::{call, check_form, Signed};
use crate::text::encode;
use crate::{error_page, page, Console};

/// What the form starts with.
const EXAMPLE_CONTEXT: &str =
    "{\n  \"kind\": \"user\",\n  \"key\": \"user-42\",\n  \"email\": \"ann@example.com\"\n}";

/// The form.
#[derive(Debug, Deserialize)]
pub(crate) struct ExplainForm {
    csrf: Option<String>,
    environment: String,
    context: String,
}

/// What the page shows under the form.
enum Outcome {
    Nothing,
    Problem(String),
    Trace(Box<Explanation>),
}

/// The project (with environments) and the flag's name, for the page.
async fn load(
    console: &Console,
    signed: &Signed,
    (project_key, flag_key): (String, String),
) -> Result<(ProjectWithEnvironments, String), ServiceError> {
    let caller = signed.caller.clone();
    call(console, move |s| {
        let project =
            s.projects()
                .get_project(&caller.may(use_case::GetProject)?, &project_key, true)?;
        let flag = s.flags().get_flag(
            &caller.may(use_case::GetFlag)?,
            &project_key,
            &flag_key,
            &[],
        )?;
        Ok((project, flag.flag.name))
    })
    .await
}

/// `GET /projects/{project}/flags/{flag}/explain`: the form.
pub(crate) async fn show(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String)>,
) -> HttpResponse {
    let (signed, project_key, flag_key) =
        match session::flag_page_request(&req, &console, path).await {
            Ok(request) => request,
            Err(answer) => return answer,
        };
    match load(&console, &signed, (project_key, flag_key.clone())).await {
        Ok((project, name)) => {
            let form = (None, EXAMPLE_CONTEXT);
            page(
                StatusCode::OK,
                explain_page(
                    &signed,
                    &project,
                    (&flag_key, &name),
                    form,
                    &Outcome::Nothing,
                ),
            )
        }
        Err(err) => error_page(&err, Some(&signed)),
    }
}

/// `POST /projects/{project}/flags/{flag}/explain`: the form, and the trace of its context.
pub(crate) async fn evaluate(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String)>,
    form: web::Form<ExplainForm>,
) -> HttpResponse {
    let (signed, project_key, flag_key) =
        match session::flag_page_request(&req, &console, path).await {
            Ok(request) => request,
            Err(answer) => return answer,
        };
    if !check_form(&req, &signed, form.csrf.as_deref()) {
        return session::forged_from(&req, &signed);
    }
    let (project, name) =
        match load(&console, &signed, (project_key.clone(), flag_key.clone())).await {
            Ok(loaded) => loaded,
            Err(err) => return error_page(&err, Some(&signed)),
        };
    let ExplainForm {
        environment,
        context,
        ..
    } = form.into_inner();
    let parsed = serde_json::from_str::<Value>(&context)
        .map_err(|e| format!("The context is not JSON: {e}."))
        .and_then(|value| {
            Context::from_json(&value).map_err(|e| format!("The context is not valid: {}.", e.0))
        });
    let (status, outcome) = match parsed {
        Err(problem) => (StatusCode::BAD_REQUEST, Outcome::Problem(problem)),
        Ok(context) => {
            let caller = signed.caller.clone();
            let (p, e, f) = (project_key, environment.clone(), flag_key.clone());
            let explained = call(&console, move |s| {
                s.evaluations().explain_flag(
                    &caller.may(use_case::EvaluateFlags)?,
                    (&p, &e, &f),
                    &context,
                )
            })
            .await;
            match explained {
                Ok(trace) => (StatusCode::OK, Outcome::Trace(Box::new(trace))),
                Err(ServiceError::NotFound(why)) => (
                    StatusCode::NOT_FOUND,
                    Outcome::Problem(format!("{}.", why.trim_end_matches('.'))),
                ),
                Err(err) => return error_page(&err, Some(&signed)),
            }
        }
    };
    page(
        status,
        explain_page(
            &signed,
            &project,
            (&flag_key, &name),
            (Some(&environment), &context),
            &outcome,
        ),
    )
}

/// A JSON value as the page shows it.
fn shown(value: &Value) -> String {
    value.to_string()
}

fn yes_no(matched: bool) -> Markup {
    html! { @if matched { span.badge.ok { "matched" } } @else { span.badge { "no match" } } }
}

fn clause_row(clause: &ClauseTrace) -> Markup {
    html! {
        tr {
            td { (clause.context_kind) }
            td { code { (clause.attribute) } }
            td { @if clause.negate { "not " } (clause.op) }
            td { @for value in &clause.values { code { (shown(value)) } " " } }
            td { @match &clause.context_value { Some(value) => code { (shown(value)) }, None => span.muted { "none" } } }
            td {
                (yes_no(clause.matched))
                @for segment in &clause.segments {
                    br; "segment " code { (segment.key) } ": " (segment.why)
                    @if let Some(index) = segment.rule_index { " (rule " (index) ")" }
                }
            }
        }
    }
}

fn rollout_section(rollout: &RolloutTrace) -> Markup {
    html! {
        h3 { "Percentage rollout" }
        p {
            "Bucketed by " code { (rollout.context_kind) "/" (rollout.bucket_by) }
            @if let Some(seed) = rollout.seed { " with seed " (seed) }
            ": bucket " strong { (format!("{:.5}", rollout.bucket)) }
            @if rollout.experiment { " (an experiment)" }
        }
        table {
            thead { tr { th scope="col" { "Variation" } th scope="col" { "From" } th scope="col" { "To" } } }
            tbody {
                @for range in &rollout.ranges {
                    tr {
                        td { (range.variation) }
                        td { (format!("{:.5}", range.from)) }
                        td { (format!("{:.5}", range.to)) }
                    }
                }
            }
        }
    }
}

/// The trace of one evaluation (a prerequisite's nested inside).
fn trace(explanation: &Explanation) -> Markup {
    let result = &explanation.result;
    html! {
        p {
            "Serves " code { (result.value.as_ref().map_or("nothing (the application's default)".to_owned(), shown)) }
            @if let Some(index) = result.variation_index { " (variation " (index) ")" }
            " because " code { (serde_json::to_string(&result.reason).unwrap_or_default()) }
            @if !explanation.on { " (targeting is off)" }
        }
        @if !explanation.prerequisites.is_empty() {
            h3 { "Prerequisites" }
            ul {
                @for prerequisite in &explanation.prerequisites {
                    li {
                        code { (prerequisite.key) } " must serve variation " (prerequisite.variation) ": "
                        @if prerequisite.met { span.badge.ok { "met" } } @else { span.badge { "not met" } }
                        @if let Some(inner) = &prerequisite.explanation { details { summary { "Its evaluation" } (trace(inner)) } }
                    }
                }
            }
        }
        @if let Some(target) = &explanation.target {
            h3 { "Individual target" }
            p { "The " (target.context_kind) " " code { (target.key) } " is a target of variation " (target.variation) "." }
        }
        @if !explanation.rules.is_empty() {
            h3 { "Rules" }
            @for rule in &explanation.rules {
                h4 { "Rule " (rule.index) @if let Some(id) = &rule.id { " " span.muted { (id) } } " " (yes_no(rule.matched)) }
                table {
                    thead { tr {
                        th scope="col" { "Kind" } th scope="col" { "Attribute" } th scope="col" { "Operator" }
                        th scope="col" { "Values" } th scope="col" { "The context's value" } th scope="col" { "Result" }
                    } }
                    tbody { @for clause in &rule.clauses { (clause_row(clause)) } }
                }
            }
        }
        @if let Some(rollout) = &explanation.rollout { (rollout_section(rollout)) }
    }
}

/// The page: the form (environment, context) and what the last evaluation found.
fn explain_page(
    signed: &Signed,
    project: &ProjectWithEnvironments,
    (flag_key, name): (&str, &str),
    (environment, context): (Option<&str>, &str),
    outcome: &Outcome,
) -> Markup {
    let project_key = project.project.key.as_str();
    let flags_link = format!("/projects/{}/flags", encode(project_key));
    let flag_link = format!("{flags_link}/{}", encode(flag_key));
    let environments = project.environments.as_deref().unwrap_or_default();
    let content = html! {
        nav.crumbs aria-label="Breadcrumb" {
            a href="/projects" { "Projects" } " / " a href=(flags_link) { (project.project.name) }
            " / " a href=(flag_link) { (name) } " / Test a context"
        }
        h1 { "Test a context on " (name) }
        p.muted {
            "What the flag serves a context, and why, as the SDKs evaluate it. The context is evaluated, never stored. "
            "It is written as the SDKs send it: " code { "kind" } " and " code { "key" } " (OFREP's " code { "targetingKey" } " is the key there), or "
            code { "{\"kind\": \"multi\", \"user\": {...}, \"org\": {...}}" } "."
        }
        form method="post" action=(format!("{flag_link}/explain")) {
            input type="hidden" name="csrf" value=(signed.csrf_token);
            label { "Environment " select name="environment" {
                @for env in environments {
                    option value=(env.key.as_str()) selected[environment == Some(env.key.as_str())] { (env.name) }
                }
            } }
            label { "Context (JSON, as the SDKs send it)"
                textarea name="context" rows="8" cols="60" spellcheck="false" { (context) }
            }
            button type="submit" { "Evaluate" }
        }
        @match outcome {
            Outcome::Nothing => {},
            Outcome::Problem(problem) => p.message.error role="alert" { (problem) },
            Outcome::Trace(explanation) => section aria-label="Evaluation" {
                h2 { "Result in " (environment.unwrap_or_default()) }
                (trace(explanation))
            },
        }
    };
    layout(&format!("Test a context: {name}"), Some(signed), &content)
}
