//! One flag: its variations, and per environment its targeting as a person reads it.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::environment::Environment;
use domain::flag::{Clause, Flag, FlagConfig, Operator, Rollout, VariationOrRollout};
use maud::{html, Markup};
use service::{FlagView, ProjectWithEnvironments};

use crate::flags::switch;
use crate::pages::{encode, layout};
use crate::session::{self, call, Signed};
use crate::{error_page, page, Console};

/// Target values shown per variation before "and N more".
const TARGETS_SHOWN: usize = 20;

/// A clause's values shown before "and N more".
const VALUES_SHOWN: usize = 10;

/// `GET /projects/{project}/flags/{flag}`.
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
    let caller = signed.caller.clone();
    let loaded = call(&console, move |s| {
        let project = s.get_project(&caller, &project_key, true)?;
        let flag = s.get_flag(&caller, &project_key, &flag_key, &[])?;
        Ok((project, flag))
    })
    .await;
    match loaded {
        Ok((project, flag)) => page(StatusCode::OK, flag_page(&signed, &project, &flag)),
        Err(err) => error_page(&err, Some(&signed)),
    }
}

/// A variation by index, as a person reads it: its name, else its value.
fn variation_name(flag: &Flag, index: usize) -> String {
    match flag.variations.get(index) {
        Some(variation) => match &variation.name {
            Some(name) if !name.is_empty() => name.clone(),
            _ => variation.value.to_string(),
        },
        None => format!("variation {index} (missing)"),
    }
}

/// An operator in words.
fn operator_words(op: &Operator, negate: bool) -> &'static str {
    match (op, negate) {
        (Operator::In, false) => "is one of",
        (Operator::In, true) => "is not one of",
        (Operator::EndsWith, false) => "ends with",
        (Operator::EndsWith, true) => "does not end with",
        (Operator::StartsWith, false) => "starts with",
        (Operator::StartsWith, true) => "does not start with",
        (Operator::Matches, false) => "matches",
        (Operator::Matches, true) => "does not match",
        (Operator::Contains, false) => "contains",
        (Operator::Contains, true) => "does not contain",
        (Operator::LessThan, false) => "is less than",
        (Operator::LessThan, true) => "is not less than",
        (Operator::LessThanOrEqual, false) => "is at most",
        (Operator::LessThanOrEqual, true) => "is more than",
        (Operator::GreaterThan, false) => "is greater than",
        (Operator::GreaterThan, true) => "is not greater than",
        (Operator::GreaterThanOrEqual, false) => "is at least",
        (Operator::GreaterThanOrEqual, true) => "is less than",
        (Operator::Before, false) => "is before",
        (Operator::Before, true) => "is not before",
        (Operator::After, false) => "is after",
        (Operator::After, true) => "is not after",
        (Operator::SegmentMatch, false) => "is in segment",
        (Operator::SegmentMatch, true) => "is not in segment",
        (Operator::SemVerEqual, false) => "is version",
        (Operator::SemVerEqual, true) => "is not version",
        (Operator::SemVerLessThan, false) => "is a version before",
        (Operator::SemVerLessThan, true) => "is not a version before",
        (Operator::SemVerGreaterThan, false) => "is a version after",
        (Operator::SemVerGreaterThan, true) => "is not a version after",
    }
}

/// A clause as a sentence: `user email ends with "@example.com"`.
pub(crate) fn clause_text(clause: &Clause) -> String {
    let mut values: Vec<String> = clause
        .values
        .iter()
        .take(VALUES_SHOWN)
        .map(ToString::to_string)
        .collect();
    if clause.values.len() > VALUES_SHOWN {
        values.push(format!("and {} more", clause.values.len() - VALUES_SHOWN));
    }
    let subject = if clause.op == Operator::SegmentMatch {
        clause.context_kind.clone()
    } else {
        format!("{} {}", clause.context_kind, clause.attribute)
    };
    format!(
        "{subject} {} {}",
        operator_words(&clause.op, clause.negate),
        values.join(", ")
    )
}

/// A rollout as a person reads it: `50% Enabled, 50% Disabled`.
pub(crate) fn rollout_text(flag: &Flag, rollout: &Rollout) -> String {
    let parts: Vec<String> = rollout
        .variations
        .iter()
        .map(|weighted| {
            // Weights are thousandths of a percent (100,000 in all).
            let percent = weighted.weight as f64 / 1000.0;
            format!("{percent}% {}", variation_name(flag, weighted.variation))
        })
        .collect();
    let by = rollout
        .bucket_by
        .as_deref()
        .map(|attribute| format!(" (by {attribute})"))
        .unwrap_or_default();
    format!("{}{by}", parts.join(", "))
}

/// What a rule or the fallthrough serves.
fn serves(flag: &Flag, served: &VariationOrRollout) -> String {
    match (&served.variation, &served.rollout) {
        (Some(index), _) => variation_name(flag, *index),
        (None, Some(rollout)) => rollout_text(flag, rollout),
        (None, None) => "nothing set".to_owned(),
    }
}

fn environment_section(
    signed: &Signed,
    project: &str,
    view: &FlagView,
    env: &Environment,
    config: &FlagConfig,
) -> Markup {
    let flag = &view.flag;
    html! {
        section.environment aria-labelledby={ "env-" (env.key.as_str()) } {
            h2 #{ "env-" (env.key.as_str()) } {
                (env.name) " " span.key.muted { (env.key.as_str()) }
                @if env.critical { " " span.badge.critical { "critical" } }
            }
            p { "Targeting: " (switch(signed, project, view, env, None)) }
            dl {
                dt { "When targeting is off, serve" }
                dd { (config.off_variation.map_or_else(|| "the code's default".to_owned(), |i| variation_name(flag, i))) }
                dt { "Prerequisites" }
                dd {
                    @if config.prerequisites.is_empty() { span.muted { "none" } }
                    @for prerequisite in &config.prerequisites {
                        div { "flag " code { (prerequisite.key) } " serves variation " (prerequisite.variation) }
                    }
                }
                dt { "Individual targets" }
                dd {
                    @if config.targets.is_empty() && config.context_targets.is_empty() { span.muted { "none" } }
                    @for target in config.targets.iter().chain(&config.context_targets) {
                        @if !target.values.is_empty() {
                            div {
                                (variation_name(flag, target.variation)) " for " (target.context_kind) " "
                                (target.values.iter().take(TARGETS_SHOWN).cloned().collect::<Vec<_>>().join(", "))
                                @if target.values.len() > TARGETS_SHOWN { " and " (target.values.len() - TARGETS_SHOWN) " more" }
                            }
                        }
                    }
                }
                dt { "Rules" }
                dd {
                    @if config.rules.is_empty() { span.muted { "none" } }
                    ol.rules {
                        @for rule in &config.rules {
                            li {
                                @if rule.disabled { span.badge { "disabled" } " " }
                                @if let Some(description) = &rule.description { strong { (description) } ": " }
                                "If "
                                @for (i, clause) in rule.clauses.iter().enumerate() {
                                    @if i > 0 { " and " }
                                    code { (clause_text(clause)) }
                                }
                                ", serve " strong { (serves(flag, &VariationOrRollout { variation: rule.variation, rollout: rule.rollout.clone() })) }
                            }
                        }
                    }
                }
                dt { "Otherwise serve" }
                dd { strong { (serves(flag, &config.fallthrough)) } }
            }
        }
    }
}

/// The flag page.
pub(crate) fn flag_page(
    signed: &Signed,
    project: &ProjectWithEnvironments,
    view: &FlagView,
) -> Markup {
    let flag = &view.flag;
    let project_key = project.project.key.as_str();
    let flags_link = format!("/projects/{}/flags", encode(project_key));
    let history_link = format!(
        "/projects/{}/flags/{}/history",
        encode(project_key),
        encode(flag.key.as_str())
    );
    let environments = project.environments.as_deref().unwrap_or_default();
    let content = html! {
        nav.crumbs aria-label="Breadcrumb" {
            a href="/projects" { "Projects" } " / " a href=(flags_link) { (project.project.name) } " / " (flag.name)
        }
        h1 { (flag.name) " " span.key.muted { (flag.key.as_str()) } }
        p {
            @if flag.archived { span.badge { "archived" } " " }
            @if flag.deprecated { span.badge { "deprecated" } " " }
            @if flag.temporary { span.badge { "temporary" } " " } @else { span.badge { "permanent" } " " }
            @for tag in &flag.tags { span.badge { (tag) } " " }
            " " a href=(history_link) { "History" }
        }
        @if !flag.description.is_empty() { p { (flag.description) } }
        h2 { "Variations" }
        table {
            thead { tr { th scope="col" { "#" } th scope="col" { "Name" } th scope="col" { "Value" } th scope="col" { "Description" } } }
            tbody {
                @for (i, variation) in flag.variations.iter().enumerate() {
                    tr {
                        td { (i) }
                        td { (variation.name.as_deref().unwrap_or("")) }
                        td { code { (variation.value.to_string()) } }
                        td { (variation.description.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
        @for env in environments {
            @if let Some(config) = flag.environments.get(env.key.as_str()) {
                (environment_section(signed, project_key, view, env, config))
            }
        }
    };
    layout(&flag.name, Some(signed), &content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::fixture;

    #[test]
    fn the_flag_page_shows_variations_and_every_environment() {
        let fx = fixture();
        let html = flag_page(&fx.owner, &fx.project, &fx.flags.items[0]).into_string();
        assert!(html.contains("Variations"));
        assert!(html.contains(r#"id="env-production""#) && html.contains(r#"id="env-test""#));
        assert_eq!(html.matches(r#"role="switch""#).count(), 2);
        assert!(html.contains("Otherwise serve"));
    }

    #[test]
    fn clauses_read_as_sentences() {
        let clause: Clause = serde_json::from_value(serde_json::json!({
            "attribute": "country", "op": "in", "values": ["de", "fr"], "negate": true, "contextKind": "user"
        }))
        .unwrap();
        assert_eq!(
            clause_text(&clause),
            r#"user country is not one of "de", "fr""#
        );
    }
}
