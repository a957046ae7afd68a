//! One flag: its variations, and per environment its targeting as a person reads it.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::environment::Environment;
use domain::flag::{Flag, FlagConfig, Rollout, VariationOrRollout};
use maud::{html, Markup};
use serde::Deserialize;
use service::{use_case, FlagView, ProjectWithEnvironments, ServiceError};

use crate::flags::{asks_confirmation, switch, SwitchPage};
use crate::pages::layout;
use crate::session;
use crate::signed::{call, Signed};
use crate::text::{clause_text, done_text, encode};
use crate::{error_page, page, Console};

/// Target values shown per variation before "and N more".
const TARGETS_SHOWN: usize = 20;

/// The flag page's query string.
#[derive(Debug, Deserialize)]
pub(crate) struct ShowQuery {
    /// The change just made (after a form's 303), said on top.
    done: Option<String>,
}

/// What the flag page says on top: a change made, or why one was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Notice {
    Done(&'static str),
    Problem(String),
}

/// `GET /projects/{project}/flags/{flag}`.
pub(crate) async fn show(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String)>,
    query: web::Query<ShowQuery>,
) -> HttpResponse {
    let (signed, project_key, flag_key) =
        match session::flag_page_request(&req, &console, path).await {
            Ok(request) => request,
            Err(answer) => return answer,
        };
    let notice = query
        .into_inner()
        .done
        .as_deref()
        .and_then(done_text)
        .map(Notice::Done);
    match load(&console, &signed, &project_key, &flag_key).await {
        Ok((project, flag)) => page(
            StatusCode::OK,
            flag_page(&signed, &project, &flag, notice.as_ref()),
        ),
        Err(err) => error_page(&err, Some(&signed)),
    }
}

/// The project (with its environments) and the flag (in all of them) the flag page shows.
pub(crate) async fn load(
    console: &Console,
    signed: &Signed,
    project_key: &str,
    flag_key: &str,
) -> Result<(ProjectWithEnvironments, FlagView), ServiceError> {
    let caller = signed.caller.clone();
    let (project_key, flag_key) = (project_key.to_owned(), flag_key.to_owned());
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
        Ok((project, flag))
    })
    .await
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
                (crate::pages::swatch(env)) " " (env.name) " " span.key.muted { (env.key.as_str()) }
                @if env.critical { " " span.badge.critical { "critical" } }
            }
            // A div, not a p: the switch is a form, which a paragraph cannot hold.
            div.targeting { span.label { "Targeting" } " " (switch(signed, project, view, env, SwitchPage::Flag, None)) }
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
            (serving_form(signed, project, flag, env, config))
        }
    }
}

/// Where a flag's forms post: `/projects/{project}/flags/{flag}/{rest}`.
fn flag_action(project: &str, flag: &Flag, rest: &str) -> String {
    format!(
        "/projects/{}/flags/{}/{rest}",
        encode(project),
        encode(flag.key.as_str())
    )
}

/// Whether the caller's role may change flags of `project` at all (the service decides each
/// change; a form it would refuse is shown disabled).
fn may_change(signed: &Signed, project: &str) -> bool {
    signed.caller.may_in(use_case::PatchFlag, project).is_ok()
}

/// Whether a form's change needs a comment (its environments' `requireComments`).
enum CommentRule<'a> {
    Optional,
    Required,
    /// Required when the change goes to one of these environments (named).
    RequiredFor(&'a [&'a str]),
}

/// A comment field for a form's change, kept in the audit log (`required` where every change
/// the form makes needs one).
fn comment_field(id: &str, rule: &CommentRule<'_>) -> Markup {
    html! {
        div.field {
            label for=(id) {
                "Comment ("
                @match rule {
                    CommentRule::Optional => "optional",
                    CommentRule::Required => "required here",
                    CommentRule::RequiredFor(names) => { "required for " (names.join(", ")) },
                }
                ", kept in the audit log)"
            }
            input id=(id) type="text" name="comment" maxlength="1000" required[matches!(rule, CommentRule::Required)];
        }
    }
}

/// The rule of a comment for a change in `env`.
fn comment_rule(required: bool) -> CommentRule<'static> {
    if required {
        CommentRule::Required
    } else {
        CommentRule::Optional
    }
}

/// The checkbox that confirms a change (`required`: the browser insists before sending).
fn confirm_field(id: &str, text: &str) -> Markup {
    html! {
        div.field {
            label.check {
                input id=(id) type="checkbox" name="confirmed" value="true" required;
                " " (text)
            }
        }
    }
}

/// The options of a variation select: every variation, `selected` chosen; when `selected` is
/// none, a first option (`keep`) says what stays as it is.
fn variation_options(flag: &Flag, selected: Option<usize>, keep: &str) -> Markup {
    html! {
        @if selected.is_none() { option value="" selected { (keep) } }
        @for (i, variation) in flag.variations.iter().enumerate() {
            option value=(variation.id) selected[selected == Some(i)] { (variation_name(flag, i)) }
        }
    }
}

/// The form that changes what an environment serves: off variation and fallthrough.
fn serving_form(
    signed: &Signed,
    project: &str,
    flag: &Flag,
    env: &Environment,
    config: &FlagConfig,
) -> Markup {
    let env_key = env.key.as_str();
    let action = flag_action(
        project,
        flag,
        &format!("environments/{}/serving", encode(env_key)),
    );
    let id = |name: &str| format!("{name}-{}", encode(env_key).replace('%', "_"));
    let fallthrough = config.fallthrough.variation;
    let was = |index: Option<usize>| {
        index
            .and_then(|i| flag.variations.get(i))
            .map(|v| v.id.clone())
            .unwrap_or_default()
    };
    let keep_fallthrough = match &config.fallthrough.rollout {
        Some(rollout) => format!("keep the rollout ({})", rollout_text(flag, rollout)),
        None => "nothing set (keep)".to_owned(),
    };
    html! {
        details.edit {
            summary { "Change what " (env.name) " serves" }
            form id=(id("serving")) method="post" action=(action) {
                fieldset disabled[!may_change(signed, project)] {
                    input type="hidden" name="csrf" value=(signed.csrf_token);
                    input type="hidden" name="version" value=(config.version);
                    input type="hidden" name="off_was" value=(was(config.off_variation));
                    input type="hidden" name="fallthrough_was" value=(was(fallthrough));
                    div.field {
                        label for=(id("off")) { "When targeting is off, serve" }
                        select id=(id("off")) name="off" {
                            (variation_options(flag, config.off_variation, "the code's default (keep)"))
                        }
                    }
                    div.field {
                        label for=(id("fallthrough")) { "Otherwise serve (when targeting is on and no target or rule matches)" }
                        select id=(id("fallthrough")) name="fallthrough" {
                            (variation_options(flag, fallthrough, &keep_fallthrough))
                        }
                    }
                    (comment_field(&id("serving-comment"), &comment_rule(env.require_comments)))
                    @if asks_confirmation(env) {
                        (confirm_field(&id("serving-confirmed"), &format!("Yes, change {}{}", env.name, if env.critical { " (a critical environment)" } else { "" })))
                    }
                    button type="submit" { "Save " (env.name) }
                }
            }
        }
    }
}

/// The flag's settings (name, description, tags) and archiving, as forms.
fn settings_section(
    signed: &Signed,
    project: &str,
    flag: &Flag,
    environments: &[&Environment],
) -> Markup {
    let enabled = may_change(signed, project);
    html! {
        details.edit {
            summary { "Edit name, description and tags" }
            form #settings-form method="post" action=(flag_action(project, flag, "settings")) {
                fieldset disabled[!enabled] {
                    input type="hidden" name="csrf" value=(signed.csrf_token);
                    input type="hidden" name="version" value=(flag.version);
                    div.field {
                        label for="flag-name" { "Name" }
                        input #flag-name type="text" name="name" value=(flag.name) required maxlength="256";
                    }
                    div.field {
                        label for="flag-description" { "Description" }
                        // A browser drops a newline right after `<textarea>`: this one, not the
                        // description's own first line break.
                        textarea #flag-description name="description" rows="3" { "\n" (flag.description) }
                    }
                    div.field {
                        label for="flag-tags" { "Tags (separated by commas)" }
                        input #flag-tags type="text" name="tags" value=(flag.tags.join(", "));
                    }
                    (comment_field("settings-comment", &CommentRule::Optional))
                    button type="submit" { "Save settings" }
                }
            }
        }
        (archive_section(signed, project, flag, environments))
    }
}

/// Archiving or restoring the flag: it changes the flag in every environment, so it asks for
/// what any of them asks (a comment, a confirmation).
fn archive_section(
    signed: &Signed,
    project: &str,
    flag: &Flag,
    environments: &[&Environment],
) -> Markup {
    let verb = if flag.archived { "Restore" } else { "Archive" };
    let requiring = names_of(environments, |env| env.require_comments);
    let asking = names_of(environments, asks_confirmation);
    html! {
        details.edit {
            summary { (verb) " this flag…" }
            form #archive-form method="post" action=(flag_action(project, flag, "archived")) {
                fieldset disabled[!may_change(signed, project)] {
                    input type="hidden" name="csrf" value=(signed.csrf_token);
                    input type="hidden" name="version" value=(flag.version);
                    input type="hidden" name="archived" value=(if flag.archived { "false" } else { "true" });
                    p.muted {
                        @if flag.archived { "A restored flag is live again in every environment, as it was when archived." }
                        @else { "An archived flag leaves the list of live flags; it serves its off variation in every environment." }
                    }
                    (comment_field("archive-comment", &comment_rule(!requiring.is_empty())))
                    @if !asking.is_empty() {
                        (confirm_field("archive-confirmed", &format!("Yes, {} it also in {}", verb.to_lowercase(), asking.join(", "))))
                    }
                    button.secondary type="submit" { (verb) " this flag" }
                }
            }
        }
    }
}

/// The names of the environments `which` picks.
fn names_of<'a>(
    environments: &[&'a Environment],
    which: impl Fn(&Environment) -> bool,
) -> Vec<&'a str> {
    environments
        .iter()
        .filter(|env| which(env))
        .map(|env| env.name.as_str())
        .collect()
}

/// The form that copies one environment's configuration onto another.
fn copy_section(
    signed: &Signed,
    project: &str,
    flag: &Flag,
    environments: &[&Environment],
) -> Markup {
    let enabled = signed
        .caller
        .may_in(use_case::CopyFlagConfig, project)
        .is_ok();
    html! {
        section.edit aria-labelledby="copy" {
            h2 #copy { "Copy an environment's configuration" }
            form #copy-form method="post" action=(flag_action(project, flag, "copy")) {
                fieldset disabled[!enabled] {
                    input type="hidden" name="csrf" value=(signed.csrf_token);
                    @for env in environments {
                        @if let Some(config) = flag.environments.get(env.key.as_str()) {
                            input type="hidden" name={ "version." (env.key.as_str()) } value=(config.version);
                        }
                    }
                    // No environment is chosen for the user: a copy onto the wrong one replaces
                    // its targeting.
                    div.field {
                        label for="copy-from" { "From" }
                        select #copy-from name="from" required {
                            option value="" selected { "Choose an environment" }
                            @for env in environments { option value=(env.key.as_str()) { (env.name) } }
                        }
                    }
                    div.field {
                        label for="copy-to" { "To" }
                        select #copy-to name="to" required {
                            option value="" selected { "Choose an environment" }
                            @for env in environments {
                                option value=(env.key.as_str()) { (env.name) @if env.critical { " (critical)" } }
                            }
                        }
                    }
                    @let requiring = names_of(environments, |env| env.require_comments);
                    @if requiring.is_empty() {
                        (comment_field("copy-comment", &CommentRule::Optional))
                    } @else {
                        (comment_field("copy-comment", &CommentRule::RequiredFor(&requiring)))
                    }
                    p.muted { "Replaces the target's targeting: on or off, individual targets, rules, fallthrough, off variation and prerequisites." }
                    (confirm_field("copy-confirmed", "Yes, replace the target environment's configuration"))
                    button type="submit" { "Copy" }
                }
            }
        }
    }
}

/// The flag page.
pub(crate) fn flag_page(
    signed: &Signed,
    project: &ProjectWithEnvironments,
    view: &FlagView,
    notice: Option<&Notice>,
) -> Markup {
    let flag = &view.flag;
    let project_key = project.project.key.as_str();
    let flags_link = format!("/projects/{}/flags", encode(project_key));
    let history_link = format!(
        "/projects/{}/flags/{}/history",
        encode(project_key),
        encode(flag.key.as_str())
    );
    let explain_link = format!(
        "/projects/{}/flags/{}/explain",
        encode(project_key),
        encode(flag.key.as_str())
    );
    let environments = project.environments.as_deref().unwrap_or_default();
    let shown: Vec<&Environment> = environments
        .iter()
        .filter(|env| flag.environments.contains_key(env.key.as_str()))
        .collect();
    let content = html! {
        nav.crumbs aria-label="Breadcrumb" {
            a href="/projects" { "Projects" } " / " a href=(flags_link) { (project.project.name) } " / " (flag.name)
        }
        h1 { (flag.name) " " span.key.muted { (flag.key.as_str()) } }
        @match notice {
            Some(Notice::Done(text)) => p.message.ok role="status" { (text) },
            Some(Notice::Problem(text)) => p.message.error role="alert" { (text) },
            None => {},
        }
        p {
            @if flag.archived { span.badge { "archived" } " " }
            @if flag.deprecated { span.badge { "deprecated" } " " }
            @if flag.temporary { span.badge { "temporary" } " " } @else { span.badge { "permanent" } " " }
            @for tag in &flag.tags { span.badge { (tag) } " " }
            " " a href=(history_link) { "History" }
            " " a href=(explain_link) { "Test a context" }
        }
        @if !flag.description.is_empty() { p.description { (flag.description) } }
        (settings_section(signed, project_key, flag, &shown))
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
        (crate::flags::switch_comment_field(environments, may_change(signed, project_key)))
        @for env in environments {
            @if let Some(config) = flag.environments.get(env.key.as_str()) {
                (environment_section(signed, project_key, view, env, config))
            }
        }
        @if shown.len() > 1 { (copy_section(signed, project_key, flag, &shown)) }
    };
    layout(&flag.name, Some(signed), &content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::fixture;
    use domain::flag::Clause;

    #[test]
    fn the_flag_page_shows_variations_and_every_environment() {
        let fx = fixture();
        let html = flag_page(&fx.owner, &fx.project, &fx.flags.items[0], None).into_string();
        assert!(html.contains("Variations"));
        assert!(html.contains(r#"id="env-production""#) && html.contains(r#"id="env-test""#));
        assert_eq!(html.matches(r#"role="switch""#).count(), 2);
        assert!(html.contains("Otherwise serve"));
        // The owner's forms: settings, archive, one per environment, copy; none disabled.
        for action in [
            "/projects/shop/flags/dark-mode/settings",
            "/projects/shop/flags/dark-mode/archived",
            "/projects/shop/flags/dark-mode/environments/production/serving",
            "/projects/shop/flags/dark-mode/environments/test/serving",
            "/projects/shop/flags/dark-mode/copy",
        ] {
            assert!(html.contains(&format!(r#"action="{action}""#)), "{action}");
        }
        assert!(!html.contains("disabled"), "the owner may change the flag");
        assert!(html.contains(r#"name="version.production""#));
        assert!(html.contains("Archive this flag"));
    }

    #[test]
    fn a_reader_gets_the_forms_disabled() {
        let fx = fixture();
        let html = flag_page(&fx.reader, &fx.project, &fx.flags.items[0], None).into_string();
        // settings, archive, two environments' serving, copy; and the two switches.
        assert_eq!(
            html.matches(" disabled>").count(),
            6,
            "five forms and the switches' comment field"
        );
        assert_eq!(html.matches(r#"role="switch""#).count(), 2);
        assert_eq!(html.matches(" disabled title=").count(), 2);
    }

    #[test]
    fn the_page_says_what_was_done_or_refused() {
        let fx = fixture();
        let view = &fx.flags.items[0];
        let done = flag_page(&fx.owner, &fx.project, view, Some(&Notice::Done("Saved.")));
        assert!(done
            .into_string()
            .contains(r#"<p class="message ok" role="status">Saved.</p>"#));
        let refused = Notice::Problem("Someone else changed <it>".into());
        let html = flag_page(&fx.owner, &fx.project, view, Some(&refused)).into_string();
        assert!(html.contains(r#"role="alert">Someone else changed &lt;it&gt;</p>"#));
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
