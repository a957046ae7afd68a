//! The flag list of a project, with a targeting switch per flag and chosen environment.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::environment::Environment;
use domain::instruction::{Instruction, SemanticPatch};
use domain::query::{Direction, FlagQuery, FlagSortField, FlagState, Sort};
use maud::{html, Markup};
use serde::Deserialize;
use service::{
    use_case, EnvironmentSelection, ExpectedVersion, FlagChange, FlagList, FlagListRequest,
    FlagView, ProjectWithEnvironments, Queued, Service, ServiceError,
};

use crate::pages::{count_line, layout, page_of, pager};
use crate::session::{self, forged_from};
use crate::signed::{call, check_form, from_htmx, has_control, Signed};
use crate::text::{encode, free_text, says_something};
use crate::{error_page, page, Console};

/// Environment columns shown when none are chosen: the project's first ones.
const DEFAULT_COLUMNS: usize = 4;

/// At most this many environment columns.
const MAX_COLUMNS: usize = 12;

/// The flag list's query string.
#[derive(Debug, Default)]
pub(crate) struct FlagsQuery {
    /// Search by name or key.
    q: Option<String>,
    /// Only flags with this tag.
    tag: Option<String>,
    /// `live` (default), `deprecated` or `archived`.
    state: Option<String>,
    /// The environment columns, keys separated by commas.
    env: Option<String>,
    /// 1-based page number.
    page: Option<u64>,
}

impl FlagsQuery {
    /// From the query string's pairs: the filter form sends one `envs` per ticked environment,
    /// links send `env` with the keys joined by commas.
    fn of(pairs: Vec<(String, String)>) -> Self {
        let mut query = Self::default();
        let mut ticked: Vec<String> = Vec::new();
        for (name, value) in pairs {
            match name.as_str() {
                "q" => query.q = Some(value),
                "tag" => query.tag = Some(value),
                "state" => query.state = Some(value),
                "env" => query.env = Some(value),
                "envs" => ticked.push(value),
                "page" => query.page = value.parse().ok(),
                _ => {}
            }
        }
        if !ticked.is_empty() {
            query.env = Some(ticked.join(","));
        }
        query
    }
}

/// What the flag list shows: the filters as understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlagFilters {
    pub(crate) search: Option<String>,
    pub(crate) tag: Option<String>,
    pub(crate) state: FlagState,
    pub(crate) columns: Vec<String>,
    pub(crate) page: u64,
}

impl FlagFilters {
    fn of(query: FlagsQuery, environments: &[Environment]) -> Self {
        let state = match query.state.as_deref() {
            Some("deprecated") => FlagState::Deprecated,
            Some("archived") => FlagState::Archived,
            _ => FlagState::Live,
        };
        let known = |key: &str| environments.iter().any(|e| e.key.as_str() == key);
        let mut columns: Vec<String> = Vec::new();
        for key in query.env.as_deref().unwrap_or("").split(',').map(str::trim) {
            if known(key) && !columns.iter().any(|c| c == key) && columns.len() < MAX_COLUMNS {
                columns.push(key.to_owned());
            }
        }
        if columns.is_empty() {
            columns = environments
                .iter()
                .take(DEFAULT_COLUMNS)
                .map(|e| e.key.to_string())
                .collect();
        }
        let text =
            |value: Option<String>| value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        Self {
            search: text(query.q),
            tag: text(query.tag),
            state,
            columns,
            page: query.page.unwrap_or(1).max(1),
        }
    }

    fn query(&self) -> FlagQuery {
        FlagQuery {
            query: self.search.clone(),
            tags: self.tag.iter().cloned().collect(),
            state: Some(self.state),
            temporary: None,
            maintainer_id: None,
            sort: Sort {
                field: FlagSortField::Name,
                direction: Direction::Ascending,
            },
            page: Some(page_of(Some(self.page)).1),
        }
    }

    /// This list's address at page `number`.
    pub(crate) fn link(&self, project: &str, number: u64) -> String {
        let mut link = format!("/projects/{}/flags?", encode(project));
        if let Some(search) = &self.search {
            link.push_str(&format!("q={}&", encode(search)));
        }
        if let Some(tag) = &self.tag {
            link.push_str(&format!("tag={}&", encode(tag)));
        }
        match self.state {
            FlagState::Live => {}
            FlagState::Deprecated => link.push_str("state=deprecated&"),
            FlagState::Archived => link.push_str("state=archived&"),
        }
        link.push_str(&format!(
            "env={}&page={number}",
            encode(&self.columns.join(","))
        ));
        link
    }
}

/// `GET /projects/{project}/flags`.
pub(crate) async fn list(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<String>,
    query: web::Query<Vec<(String, String)>>,
) -> HttpResponse {
    let signed = match session::require(&req, &console).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let project_key = path.into_inner();
    let caller = signed.caller.clone();
    let query = FlagsQuery::of(query.into_inner());
    let texts = [&query.q, &query.tag, &query.env];
    if has_control(&project_key) || texts.iter().any(|t| t.as_deref().is_some_and(has_control)) {
        return crate::pages::bad_input(
            &signed,
            "A project key, search or tag must not contain control characters.",
        );
    }
    let loaded = call(&console, move |s| {
        let project =
            s.projects()
                .get_project(&caller.may(use_case::GetProject)?, &project_key, true)?;
        let environments = project.environments.clone().unwrap_or_default();
        let filters = FlagFilters::of(query, &environments);
        let request = FlagListRequest {
            query: filters.query(),
            environments: EnvironmentSelection::Only(filters.columns.clone()),
        };
        let flags = s.flags().list_flags(
            &caller.may(use_case::ListFlags)?,
            project.project.key.as_str(),
            &request,
        )?;
        Ok((project, filters, flags))
    })
    .await;
    match loaded {
        Ok((project, filters, flags)) => page(
            StatusCode::OK,
            flag_list_page(&signed, &project, &filters, &flags, None),
        ),
        Err(err) => error_page(&err, Some(&signed)),
    }
}

/// Whether the caller may switch targeting of `flag` in environment `env`.
fn may_switch(signed: &Signed, project: &str, flag: &FlagView, env: &str) -> bool {
    if signed.caller.may_in(use_case::PatchFlag, project).is_err() {
        return false;
    }
    let mut allowed = false;
    let _: Result<(), ()> = signed
        .caller
        .flag_access(project, &flag.flag, &[env], |_, access| {
            allowed = access.allowed.iter().any(|a| a.action == "updateOn");
            Ok(())
        });
    allowed
}

/// The id of a flag's switch in an environment (for htmx to replace it).
fn switch_id(flag: &str, env: &str) -> String {
    format!(
        "switch-{}-{}",
        flag.len(),
        encode(&format!("{flag}.{env}")).replace('%', "_")
    )
}

/// The page a switch is on: where a change made without JavaScript returns to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SwitchPage {
    /// A project's flag list.
    List,
    /// The flag's own page.
    Flag,
}

impl SwitchPage {
    fn as_str(self) -> &'static str {
        match self {
            Self::List => "list",
            Self::Flag => "flag",
        }
    }

    /// From a form's `from` field: the flag's page, or else the list.
    fn of(field: Option<&str>) -> Self {
        if field == Some("flag") {
            Self::Flag
        } else {
            Self::List
        }
    }

    /// The page's address, for flag `flag` of `project`.
    fn link(self, project: &str, flag: &str) -> String {
        match self {
            Self::List => format!("/projects/{}/flags", encode(project)),
            Self::Flag => format!("/projects/{}/flags/{}", encode(project), encode(flag)),
        }
    }
}

/// One flag's switch in one environment: a form that turns targeting the other way.
pub(crate) fn switch(
    signed: &Signed,
    project: &str,
    flag: &FlagView,
    env: &Environment,
    shown_on: SwitchPage,
    problem: Option<&str>,
) -> Markup {
    let key = flag.flag.key.as_str();
    let env_key = env.key.as_str();
    let Some(config) = flag.flag.environments.get(env_key) else {
        return html! { span.muted { "—" } };
    };
    let enabled = may_switch(signed, project, flag, env_key);
    let action = format!(
        "/projects/{}/flags/{}/environments/{}/targeting",
        encode(project),
        encode(key),
        encode(env_key)
    );
    let label = format!(
        "Targeting of {} in {}: {}. {}",
        flag.flag.name,
        env.name,
        if config.on { "on" } else { "off" },
        if enabled {
            if config.on {
                "Turn it off"
            } else {
                "Turn it on"
            }
        } else {
            "You may not change it"
        }
    );
    let id = switch_id(key, env_key);
    html! {
        form.switch id=(id) method="post" action=(action)
            hx-post=(action) hx-target="this" hx-swap="outerHTML" hx-include="#change-comment"
            hx-confirm=[asks_confirmation(env).then(|| confirmation_question(env, &flag.flag.name, !config.on))]
            hx-vals=[asks_confirmation(env).then_some(r#"{"confirmed": "true"}"#)] {
            input type="hidden" name="csrf" value=(signed.csrf_token);
            input type="hidden" name="on" value=(if config.on { "false" } else { "true" });
            input type="hidden" name="version" value=(config.version);
            input type="hidden" name="from" value=(shown_on.as_str());
            // An id, so that htmx gives the new switch the focus the old one had.
            button.toggle id={ (id) "-button" } type="submit" role="switch" aria-checked=(if config.on { "true" } else { "false" })
                aria-label=(label) disabled[!enabled] title=(label) {
                span.knob aria-hidden="true" {}
                span.state { (if config.on { "On" } else { "Off" }) }
            }
            @if env.critical {
                " " span.badge.critical title="critical environment" {
                    span aria-hidden="true" { "!" } span.visually-hidden { "critical environment" }
                }
            }
            @if let Some(problem) = problem {
                p.message.error role="alert" { (problem) }
            }
        }
    }
}

/// The comment field the page's switches send along (`hx-include`), saying in which of
/// `environments` a comment is required; disabled for a caller who may change no flag.
pub(crate) fn switch_comment_field<'a>(
    environments: impl IntoIterator<Item = &'a Environment>,
    enabled: bool,
) -> Markup {
    let requiring: Vec<&str> = environments
        .into_iter()
        .filter(|env| env.require_comments)
        .map(|env| env.name.as_str())
        .collect();
    html! {
        div.comment {
            label for="change-comment" {
                "Comment for the next switch you turn here (kept in the audit log; "
                @if requiring.is_empty() { "optional" } @else { "required in " (requiring.join(", ")) }
                ")"
            }
            (comment_input(enabled, false))
        }
    }
}

/// The switches' comment input; `out_of_band`: sent with a switch that changed, to empty the
/// page's field (a comment goes with one change).
fn comment_input(enabled: bool, out_of_band: bool) -> Markup {
    html! {
        input #change-comment type="text" name="comment" maxlength="1000" disabled[!enabled]
            hx-swap-oob=[out_of_band.then_some("true")];
    }
}

/// The flag list page.
pub(crate) fn flag_list_page(
    signed: &Signed,
    project: &ProjectWithEnvironments,
    filters: &FlagFilters,
    flags: &FlagList,
    notice: Option<&str>,
) -> Markup {
    let project_key = project.project.key.as_str();
    let environments = project.environments.as_deref().unwrap_or_default();
    let columns: Vec<&Environment> = filters
        .columns
        .iter()
        .filter_map(|key| environments.iter().find(|e| e.key.as_str() == key))
        .collect();
    let content = html! {
        nav.crumbs aria-label="Breadcrumb" { a href="/projects" { "Projects" } " / " (project.project.name) }
        h1 { "Flags" }
        @if let Some(notice) = notice { p.message.error role="alert" { (notice) } }
        form.filters method="get" action={ "/projects/" (encode(project_key)) "/flags" } role="search" {
            div {
                label for="q" { "Search" }
                input #q type="search" name="q" value=(filters.search.as_deref().unwrap_or("")) placeholder="name or key";
            }
            div {
                label for="tag" { "Tag" }
                input #tag type="text" name="tag" value=(filters.tag.as_deref().unwrap_or(""));
            }
            div {
                label for="state" { "State" }
                select #state name="state" {
                    option value="live" selected[filters.state == FlagState::Live] { "Live" }
                    option value="deprecated" selected[filters.state == FlagState::Deprecated] { "Deprecated" }
                    option value="archived" selected[filters.state == FlagState::Archived] { "Archived" }
                }
            }
            fieldset {
                legend { "Environments" }
                @for env in environments {
                    label.check {
                        input type="checkbox" name="envs" value=(env.key.as_str()) checked[filters.columns.iter().any(|c| c == env.key.as_str())];
                        " " (env.name)
                    }
                }
            }
            div { button type="submit" { "Apply" } }
        }
        (count_line(flags.total, "flag"))
        (switch_comment_field(columns.iter().copied(), signed.caller.may_in(use_case::PatchFlag, project_key).is_ok()))
        table.flags {
            thead {
                tr {
                    th scope="col" { "Flag" }
                    th scope="col" { "Tags" }
                    @for env in &columns { th scope="col" { (crate::pages::swatch(env)) " " (env.name) } }
                }
            }
            tbody {
                @for flag in &flags.items {
                    tr {
                        td {
                            a href={ "/projects/" (encode(project_key)) "/flags/" (encode(flag.flag.key.as_str())) } { (flag.flag.name) }
                            br; span.key.muted { (flag.flag.key.as_str()) }
                        }
                        td { @for tag in &flag.flag.tags { span.badge { (tag) } " " } }
                        @for env in &columns { td { (switch(signed, project_key, flag, env, SwitchPage::List, None)) } }
                    }
                }
            }
        }
        (pager(flags.total, filters.page, |n| filters.link(project_key, n)))
    };
    layout(
        &format!("Flags of {}", project.project.name),
        Some(signed),
        &content,
    )
}

/// The switch form.
#[derive(Debug, Deserialize)]
pub(crate) struct SwitchForm {
    csrf: Option<String>,
    /// `true` or `false`; anything else is refused (400).
    on: bool,
    version: i64,
    comment: Option<String>,
    /// Sent by htmx after its dialog (`hx-vals`), or by the confirmation page's form.
    #[serde(default)]
    confirmed: bool,
    /// The page the switch is on (`list` or `flag`).
    from: Option<String>,
}

/// The flag and environment a switch changes.
struct SwitchTarget<'a> {
    project: &'a str,
    flag: &'a str,
    env: &'a Environment,
}

/// The page that asks to confirm a switch sent without JavaScript (so without its dialog), or
/// for the comment its environment requires.
fn confirm_switch_page(
    signed: &Signed,
    target: &SwitchTarget<'_>,
    form: &SwitchForm,
    comment: Option<&str>,
    reason: &str,
) -> Markup {
    let title = if asks_confirmation(target.env) {
        "Confirm the change"
    } else {
        "Comment on the change"
    };
    let back = SwitchPage::of(form.from.as_deref()).link(target.project, target.flag);
    let action = format!(
        "/projects/{}/flags/{}/environments/{}/targeting",
        encode(target.project),
        encode(target.flag),
        encode(target.env.key.as_str())
    );
    let content = html! {
        h1 { (title) }
        p.message.error role="alert" { (reason) }
        @if asks_confirmation(target.env) { p { (confirmation_question(target.env, target.flag, form.on)) } }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(signed.csrf_token);
            input type="hidden" name="on" value=(if form.on { "true" } else { "false" });
            input type="hidden" name="version" value=(form.version);
            input type="hidden" name="confirmed" value="true";
            input type="hidden" name="from" value=(SwitchPage::of(form.from.as_deref()).as_str());
            div.field {
                label for="confirm-comment" {
                    "Comment" @if !target.env.require_comments { " (optional)" } ", kept in the audit log"
                }
                input #confirm-comment type="text" name="comment" maxlength="1000"
                    value=(comment.unwrap_or("")) required[target.env.require_comments];
            }
            button type="submit" { "Yes, turn it " (if form.on { "on" } else { "off" }) }
            " " a href=(back) { "Cancel" }
        }
    };
    layout(title, Some(signed), &content)
}

/// Whether a change in `env` is confirmed first: a critical environment, or one whose
/// `confirmChanges` is on (the API leaves both to the UI).
pub(crate) fn asks_confirmation(env: &Environment) -> bool {
    env.critical || env.confirm_changes
}

/// What the confirmation of turning `flag` on (`on`) or off in `env` asks.
fn confirmation_question(env: &Environment, flag: &str, on: bool) -> String {
    let why = if env.critical {
        "is a critical environment"
    } else {
        "asks to confirm every change"
    };
    let comment = if env.require_comments {
        " (it also requires a comment: the field above the switches)"
    } else {
        ""
    };
    format!(
        "{} {why}{comment}. Turn {flag} {} there?",
        env.name,
        if on { "on" } else { "off" }
    )
}

/// Why a change in `env` cannot be made as sent, if it cannot: the environment's
/// `requireComments` and `confirmChanges` (with `critical`), which the API leaves to the UI.
pub(crate) fn environment_refusal(
    env: &Environment,
    comment: Option<&str>,
    confirmed: bool,
) -> Option<String> {
    if env.require_comments && comment.is_none_or(|c| !c.chars().any(says_something)) {
        return Some(format!(
            "{} requires a comment with every change: write one in the comment field, then try again.",
            env.name
        ));
    }
    if asks_confirmation(env) && !confirmed {
        return Some(format!(
            "Changes in {} must be confirmed: tick the confirmation, then try again.",
            env.name
        ));
    }
    None
}

/// `POST /projects/{project}/flags/{flag}/environments/{env}/targeting`: turns targeting on or
/// off (a semantic patch, `turnFlagOn`/`turnFlagOff`), if the environment's configuration is
/// still at the version the page showed. From htmx, the answer is the new switch (or the
/// switch with the reason it did not change); without JavaScript, back to the list.
pub(crate) async fn switch_targeting(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String, String)>,
    form: web::Form<SwitchForm>,
) -> HttpResponse {
    let signed = match session::require(&req, &console).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let form = form.into_inner();
    if !check_form(&req, &signed, form.csrf.as_deref()) {
        return forged_from(&req, &signed);
    }
    let (project, flag, env) = path.into_inner();
    if [&project, &flag, &env].iter().any(|t| has_control(t)) {
        return crate::pages::bad_input(&signed, "A key must not contain control characters.");
    }
    let comment = free_text(form.comment.clone());
    // The environment's rules for changes (a comment, a confirmation), which the API leaves to
    // the UI.
    let caller = signed.caller.clone();
    let (p, e) = (project.clone(), env.clone());
    let rules = call(&console, move |s| {
        s.environments()
            .get_environment(&caller.may(use_case::GetEnvironment)?, &p, &e)
    })
    .await;
    let refusal = match &rules {
        Ok(environment) => environment_refusal(environment, comment.as_deref(), form.confirmed),
        Err(_) => None,
    };
    // Who may not change flags learns that first, before what the environment asks.
    let rules = match signed.caller.may_in(use_case::PatchFlag, &project) {
        Ok(_) => rules,
        Err(err) => Err(err),
    };
    // Whether the switch changed the flag (it may already have been as asked), or why not.
    let written: Result<bool, String> = match (rules, refusal) {
        (Err(err), _) if !from_htmx(&req) => return error_page(&err, Some(&signed)),
        (Err(err), _) => Err(problem_text(&err)),
        // Without JavaScript there was no dialog, and the comment field above the switches is
        // not in the switch's form: a page of its own asks for the confirmation or the comment.
        (Ok(environment), Some(refusal)) if !from_htmx(&req) => {
            let target = SwitchTarget {
                project: &project,
                flag: &flag,
                env: &environment,
            };
            return page(
                StatusCode::OK,
                confirm_switch_page(&signed, &target, &form, comment.as_deref(), &refusal),
            );
        }
        (Ok(_), Some(refusal)) => Err(refusal),
        (Ok(_), None) => {
            let patch = SemanticPatch {
                environment_key: Some(env.clone()),
                comment,
                instructions: vec![if form.on {
                    Instruction::TurnFlagOn
                } else {
                    Instruction::TurnFlagOff
                }],
            };
            let expected = ExpectedVersion::Environment {
                key: env.clone(),
                version: form.version,
            };
            match patch_flag(&console, &signed, &project, &flag, patch, expected).await {
                Ok(view) => Ok(view
                    .flag
                    .environments
                    .get(&env)
                    .is_some_and(|config| config.version != form.version)),
                Err(err) if !from_htmx(&req) => return error_page(&err, Some(&signed)),
                Err(err) => Err(problem_text(&err)),
            }
        }
    };
    let shown_on = SwitchPage::of(form.from.as_deref());
    if !from_htmx(&req) {
        return crate::see_other(&shown_on.link(&project, &flag));
    }
    switch_now(
        &console,
        &signed,
        (&project, &flag, &env),
        shown_on,
        written,
    )
    .await
}

/// The switch as it is now, for htmx to swap in: with the reason when the change was refused,
/// and the comment field emptied when it made one.
async fn switch_now(
    console: &Console,
    signed: &Signed,
    (project, flag, env): (&str, &str, &str),
    shown_on: SwitchPage,
    written: Result<bool, String>,
) -> HttpResponse {
    let changed = written.as_ref().is_ok_and(|changed| *changed);
    let problem = written.err();
    let caller = signed.caller.clone();
    let (p, f) = (project.to_owned(), flag.to_owned());
    let envs = vec![env.to_owned()];
    let current = call(console, move |s| {
        let project = s
            .projects()
            .get_project(&caller.may(use_case::GetProject)?, &p, true)?;
        let flag = s
            .flags()
            .get_flag(&caller.may(use_case::GetFlag)?, &p, &f, &envs)?;
        Ok((project, flag))
    })
    .await;
    match current {
        Ok((project_view, flag_view)) => {
            let environment = project_view
                .environments
                .as_deref()
                .unwrap_or_default()
                .iter()
                .find(|e| e.key.as_str() == env);
            match environment {
                Some(environment) => page(
                    StatusCode::OK,
                    html! {
                        (switch(signed, project, &flag_view, environment, shown_on, problem.as_deref()))
                        // The comment went with this change (if it made one): the page's field
                        // is emptied.
                        @if changed { (comment_input(true, true)) }
                    },
                ),
                None => problem_fragment(&format!("The project has no environment '{env}'.")),
            }
        }
        // htmx swaps only a 2xx answer: the reason takes the switch's place.
        Err(err) => problem_fragment(&problem.unwrap_or_else(|| problem_text(&err))),
    }
}

/// Changes flag `flag` of `project` by `patch` as the signed-in caller, if it still has the
/// version `expected` (the one the page showed).
pub(crate) async fn patch_flag(
    console: &Console,
    signed: &Signed,
    project: &str,
    flag: &str,
    patch: SemanticPatch,
    expected: ExpectedVersion,
) -> Result<FlagView, ServiceError> {
    let permit = signed.caller.may_in(use_case::PatchFlag, project)?;
    let service: Arc<Service> = console.service.clone();
    let queued = service.queue_patch_flag_at(
        &permit,
        project,
        flag,
        FlagChange::Semantic(patch),
        Some(expected),
    );
    // The change waits for its turn without a thread; its turn writes on the blocking pool.
    match queued.await {
        Queued::Answered(outcome) => outcome,
        Queued::Writes(turn) => call(console, move |_| turn.write()).await,
    }
}

/// A message in place of a switch that cannot be shown.
fn problem_fragment(message: &str) -> HttpResponse {
    page(
        StatusCode::OK,
        html! { p.message.error role="alert" { (message) } },
    )
}

/// What a refused switch says beside it.
fn problem_text(err: &ServiceError) -> String {
    match err {
        ServiceError::VersionConflict(_) => {
            "Someone else changed this flag here since the page was loaded; this is its current state. Try again if you still want to.".to_owned()
        }
        ServiceError::NotPermitted(_) => format!("Not permitted: {err}"),
        ServiceError::Unavailable(_) => "The database cannot be reached; try again.".to_owned(),
        ServiceError::Internal(_) => {
            log::error!("console: internal error: {err}");
            "Something went wrong on the server.".to_owned()
        }
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::fixture;

    fn filters(columns: &[&str]) -> FlagFilters {
        FlagFilters {
            search: None,
            tag: None,
            state: FlagState::Live,
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            page: 1,
        }
    }

    #[test]
    fn the_flag_list_renders_a_switch_per_flag_and_environment() {
        let fx = fixture();
        let html = flag_list_page(
            &fx.owner,
            &fx.project,
            &filters(&["production", "test"]),
            &fx.flags,
            None,
        )
        .into_string();
        assert_eq!(html.matches(r#"role="switch""#).count(), 4);
        assert!(!html.contains(" disabled"), "the owner may switch");
        assert!(html.contains("Dark &lt;mode&gt;"), "names are escaped");
        assert!(html.contains("hx-confirm=\"Production is a critical environment"));
        assert_eq!(
            html.matches("hx-confirm").count(),
            2,
            "only production asks"
        );
        assert!(html.contains(&format!(r#"name="csrf" value="{}""#, "c".repeat(64))));
        assert!(html.contains("2 flags"));
    }

    #[test]
    fn a_reader_gets_the_switches_disabled() {
        let fx = fixture();
        let html = flag_list_page(
            &fx.reader,
            &fx.project,
            &filters(&["test"]),
            &fx.flags,
            None,
        )
        .into_string();
        assert_eq!(html.matches(r#"role="switch""#).count(), 2);
        assert_eq!(
            html.matches(" disabled").count(),
            3,
            "two switches and the comment field"
        );
        assert!(html.contains("You may not change it"));
    }

    #[test]
    fn a_refused_switch_says_why() {
        let fx = fixture();
        let environments = fx.project.environments.as_deref().unwrap_or_default();
        let html = switch(
            &fx.owner,
            "shop",
            &fx.flags.items[0],
            &environments[0],
            SwitchPage::List,
            Some("Someone else changed this flag"),
        )
        .into_string();
        assert!(html.starts_with("<form"));
        assert!(html.contains(r#"role="alert""#));
        assert!(html.contains("Someone else changed this flag"));
    }

    #[test]
    fn links_keep_the_filters() {
        let mut f = filters(&["production", "test"]);
        f.search = Some("dark mode".into());
        f.tag = Some("ui".into());
        f.state = FlagState::Archived;
        assert_eq!(
            f.link("shop", 3),
            "/projects/shop/flags?q=dark%20mode&tag=ui&state=archived&env=production%2Ctest&page=3"
        );
    }

    #[test]
    fn unknown_and_repeated_columns_are_dropped() {
        let fx = fixture();
        let environments = fx.project.environments.clone().unwrap_or_default();
        let query = FlagsQuery::of(vec![
            ("envs".into(), "test".into()),
            ("envs".into(), "nothing".into()),
            ("envs".into(), "test".into()),
        ]);
        assert_eq!(FlagFilters::of(query, &environments).columns, vec!["test"]);
        let defaulted = FlagFilters::of(FlagsQuery::default(), &environments);
        assert_eq!(defaulted.columns, vec!["production", "test"]);
    }
}
