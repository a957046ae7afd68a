//! Changing a flag from its page: its settings (name, description, tags), what an environment
//! serves (off variation, fallthrough), archiving and restoring, and copying one environment's
//! configuration onto another.
//!
//! Every form carries the version its page showed, and the change applies only if the flag (or
//! the environment's configuration) still has it: a form filled in from a stale page is refused
//! (409) and the page shows the flag as it is now. A change that succeeds goes back to the page
//! with a 303 (so reloading does not send it again).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::flag::{CopyEnvironment, FlagCopyPost};
use domain::instruction::{Instruction, SemanticPatch, ServeInput};
use serde::Deserialize;
use service::{use_case, ExpectedVersion, ServiceError};

use crate::flag_page::{self, Notice};
use crate::flags::{environment_refusal, patch_flag};
use crate::session;
use crate::signed::{call, check_form, has_control, Signed};
use crate::text::{encode, free_text};
use crate::{error_page, page, see_other, Console};

/// The flag's page, after a change, saying `done`.
fn back_to_flag(project: &str, flag: &str, done: &str) -> HttpResponse {
    see_other(&format!(
        "/projects/{}/flags/{}?done={done}",
        encode(project),
        encode(flag)
    ))
}

/// A refused change: the flag's page as the flag is now, with the reason on top and the
/// refusal's status (409 for a stale form, 403, 400...).
async fn refused(
    console: &Console,
    signed: &Signed,
    project: &str,
    flag: &str,
    err: &ServiceError,
) -> HttpResponse {
    let reason = match err {
        ServiceError::VersionConflict(_) => "Someone else changed this flag since the page was \
             loaded, so nothing was saved. This is the flag as it is now: make your change again \
             if you still want it."
            .to_owned(),
        ServiceError::NotPermitted(_) => format!("Not permitted: {err}"),
        ServiceError::Internal(_) | ServiceError::Unavailable(_) => {
            return error_page(err, Some(signed))
        }
        _ => format!("Not saved: {err}"),
    };
    refused_because(
        console,
        signed,
        (project, flag),
        crate::status_of(err),
        reason,
    )
    .await
}

/// The flag's page as the flag is now, saying `reason`, with `status`.
async fn refused_because(
    console: &Console,
    signed: &Signed,
    (project, flag): (&str, &str),
    status: StatusCode,
    reason: String,
) -> HttpResponse {
    match flag_page::load(console, signed, project, flag).await {
        Ok((project_view, flag_view)) => page(
            status,
            flag_page::flag_page(
                signed,
                &project_view,
                &flag_view,
                Some(&Notice::Problem(reason)),
            ),
        ),
        Err(load_err) => error_page(&load_err, Some(signed)),
    }
}

/// The refusal of a change that does not meet the rules (a comment, a confirmation) of
/// environment `env`, or of every environment for `None` (archiving changes the flag in all of
/// them), if it does not; `None` if it may go ahead.
async fn unmet_rules(
    console: &Console,
    signed: &Signed,
    (project, flag): (&str, &str),
    env: Option<&str>,
    comment: Option<&str>,
    confirmed: bool,
) -> Option<HttpResponse> {
    let caller = signed.caller.clone();
    let (p, e) = (project.to_owned(), env.map(str::to_owned));
    let environments = call(console, move |s| match e {
        Some(e) => Ok(vec![s.environments().get_environment(
            &caller.may(use_case::GetEnvironment)?,
            &p,
            &e,
        )?]),
        None => Ok(s
            .projects()
            .get_project(&caller.may(use_case::GetProject)?, &p, true)?
            .environments
            .unwrap_or_default()),
    })
    .await;
    match environments {
        Ok(environments) => {
            let refusal = environments
                .iter()
                .find_map(|env| environment_refusal(env, comment, confirmed))?;
            Some(
                refused_because(
                    console,
                    signed,
                    (project, flag),
                    StatusCode::BAD_REQUEST,
                    refusal,
                )
                .await,
            )
        }
        Err(err) => Some(refused(console, signed, project, flag, &err).await),
    }
}

/// The checks every change passes (session, same origin and CSRF token, keys without control
/// characters); the signed-in caller and the path's keys, or the answer to give instead.
async fn change_request(
    req: &HttpRequest,
    console: &Console,
    keys: Vec<String>,
    csrf: Option<&str>,
) -> Result<(Signed, Vec<String>), HttpResponse> {
    let signed = session::require(req, console).await?;
    if !check_form(req, &signed, csrf) {
        return Err(session::forged(Some(&signed)));
    }
    if keys.iter().any(|k| has_control(k)) {
        return Err(crate::pages::bad_input(
            &signed,
            "A key must not contain control characters.",
        ));
    }
    Ok((signed, keys))
}

/// Applies `patch` (without instructions: nothing to do) to the flag at the version the page
/// showed.
async fn apply(
    console: &Console,
    signed: &Signed,
    keys: &[String],
    patch: SemanticPatch,
    expected: ExpectedVersion,
    done: &str,
) -> HttpResponse {
    let [project, flag, ..] = keys else {
        return crate::pages::bad_input(signed, "The address names no flag.");
    };
    if patch.instructions.is_empty() {
        return back_to_flag(project, flag, "unchanged");
    }
    let unchanged = |view: &service::FlagView| match &expected {
        ExpectedVersion::Flag(version) => view.flag.version == *version,
        ExpectedVersion::Environment { key, version } => view
            .flag
            .environments
            .get(key)
            .is_some_and(|config| config.version == *version),
    };
    match patch_flag(console, signed, project, flag, patch, expected.clone()).await {
        // Archiving an archived flag, say: nothing to do, and nothing said to be done.
        Ok(view) if unchanged(&view) => back_to_flag(project, flag, "unchanged"),
        Ok(_) => back_to_flag(project, flag, done),
        Err(err) => refused(console, signed, project, flag, &err).await,
    }
}

/// A semantic patch of `instructions` in `environment` (none: the flag's settings), with the
/// form's comment.
fn semantic_patch(
    environment: Option<String>,
    instructions: Vec<Instruction>,
    comment: Option<String>,
) -> SemanticPatch {
    SemanticPatch {
        environment_key: environment,
        comment: free_text(comment),
        instructions,
    }
}

/// A form's address opened with GET (after a refusal, the browser's address is the form's):
/// the flag's page, `/projects/{project}/flags/{flag}`, the address's first segments as they
/// came (encoded as they were, so not encoded again).
pub(crate) async fn to_flag_page(req: HttpRequest) -> HttpResponse {
    let flag_page: Vec<&str> = req.path().split('/').take(5).collect();
    see_other(&flag_page.join("/"))
}

/// The settings form.
#[derive(Debug, Deserialize)]
pub(crate) struct SettingsForm {
    csrf: Option<String>,
    /// The flag's `_version` the page showed.
    version: i64,
    name: String,
    #[serde(default)]
    description: String,
    /// Tags separated by commas.
    #[serde(default)]
    tags: String,
    comment: Option<String>,
}

/// The tags of a comma-separated list: trimmed, without blanks and repeats, in order.
pub(crate) fn parse_tags(list: &str) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    for tag in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if !tags.iter().any(|t| t == tag) {
            tags.push(tag.to_owned());
        }
    }
    tags
}

/// The instructions that make a flag's name, description and tags those of the form.
pub(crate) fn settings_instructions(
    flag: &domain::flag::Flag,
    name: &str,
    description: &str,
    tags: &[String],
) -> Vec<Instruction> {
    let mut instructions = Vec::new();
    // A name is compared trimmed (the form trims what is typed), a description with its line
    // breaks as `\n` (a browser sends every line break as CR LF): a field left as it was
    // changes nothing, whatever spaces or line breaks the API stored.
    if name.trim() != flag.name.trim() {
        instructions.push(Instruction::UpdateName {
            value: name.trim().to_owned(),
        });
    }
    let description = line_breaks_as_lf(description);
    if description != line_breaks_as_lf(&flag.description) {
        instructions.push(Instruction::UpdateDescription { value: description });
    }
    let removed: Vec<String> = flag
        .tags
        .iter()
        .filter(|t| !tags.contains(t))
        .cloned()
        .collect();
    let added: Vec<String> = tags
        .iter()
        .filter(|t| !flag.tags.contains(t))
        .cloned()
        .collect();
    if !removed.is_empty() {
        instructions.push(Instruction::RemoveTags { values: removed });
    }
    if !added.is_empty() {
        instructions.push(Instruction::AddTags { values: added });
    }
    instructions
}

/// `text` with every line break (CR LF, CR, LF) as LF.
fn line_breaks_as_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// `POST /projects/{project}/flags/{flag}/settings`: name, description and tags.
pub(crate) async fn save_settings(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String)>,
    form: web::Form<SettingsForm>,
) -> HttpResponse {
    let form = form.into_inner();
    let (project, flag) = path.into_inner();
    let (signed, keys) =
        match change_request(&req, &console, vec![project, flag], form.csrf.as_deref()).await {
            Ok(checked) => checked,
            Err(answer) => return answer,
        };
    let name = form.name.trim().to_owned();
    if has_control(&name) || has_control(&form.tags) {
        return crate::pages::bad_input(
            &signed,
            "A name or tag must not contain control characters.",
        );
    }

    let tags = parse_tags(&form.tags);
    // The instructions are made from the flag as the page showed it (its version is checked
    // with the flag locked): read it now, and let the version check refuse a stale form.
    let (p, f, caller) = (keys[0].clone(), keys[1].clone(), signed.caller.clone());
    let current = match call(&console, move |s| {
        s.flags()
            .get_flag(&caller.may(use_case::GetFlag)?, &p, &f, &[])
    })
    .await
    {
        Ok(view) => view.flag,
        Err(err) => return error_page(&err, Some(&signed)),
    };
    if current.version != form.version {
        let stale = ServiceError::VersionConflict(
            format!(
                "the flag is at version {}, not {}",
                current.version, form.version
            )
            .into(),
        );
        return refused(&console, &signed, &keys[0], &keys[1], &stale).await;
    }
    let instructions = settings_instructions(&current, &name, &form.description, &tags);
    // A description typed here has no control characters but line breaks and tabs (NUL, which
    // no API client could send back, least of all); one left as it was is not checked.
    let typed = instructions.iter().any(|i| match i {
        Instruction::UpdateDescription { value } => value
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\t')),
        _ => false,
    });
    if typed {
        return crate::pages::bad_input(
            &signed,
            "A description must not contain control characters other than line breaks and tabs.",
        );
    }
    apply(
        &console,
        &signed,
        &keys,
        semantic_patch(None, instructions, form.comment),
        ExpectedVersion::Flag(form.version),
        "settings",
    )
    .await
}

/// The form of what an environment serves.
#[derive(Debug, Deserialize)]
pub(crate) struct ServingForm {
    csrf: Option<String>,
    /// The configuration's `version` the page showed.
    version: i64,
    /// The off variation's `_id`; empty: unchanged.
    #[serde(default)]
    off: String,
    /// The fallthrough variation's `_id`; empty: unchanged (a rollout stays).
    #[serde(default)]
    fallthrough: String,
    /// The variation ids the page showed as selected, to change only what the form changed.
    #[serde(default)]
    off_was: String,
    #[serde(default)]
    fallthrough_was: String,
    comment: Option<String>,
    /// The confirmation's checkbox (environments that ask for one).
    #[serde(default)]
    confirmed: bool,
}

/// `POST /projects/{project}/flags/{flag}/environments/{env}/serving`: the off variation and
/// the fallthrough of one environment.
pub(crate) async fn save_serving(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String, String)>,
    form: web::Form<ServingForm>,
) -> HttpResponse {
    let form = form.into_inner();
    let (project, flag, env) = path.into_inner();
    let (signed, keys) = match change_request(
        &req,
        &console,
        vec![project, flag, env],
        form.csrf.as_deref(),
    )
    .await
    {
        Ok(checked) => checked,
        Err(answer) => return answer,
    };
    let mut instructions = Vec::new();
    if !form.off.is_empty() && form.off != form.off_was {
        instructions.push(Instruction::UpdateOffVariation {
            variation_id: form.off,
        });
    }
    if !form.fallthrough.is_empty() && form.fallthrough != form.fallthrough_was {
        instructions.push(Instruction::UpdateFallthroughVariationOrRollout {
            serve: ServeInput {
                variation_id: Some(form.fallthrough),
                ..ServeInput::default()
            },
        });
    }
    let env = keys[2].clone();
    let comment = free_text(form.comment);
    if !instructions.is_empty() {
        // Who may not change flags learns that first, before what the environment asks.
        if let Err(err) = signed.caller.may_in(use_case::PatchFlag, &keys[0]) {
            return refused(&console, &signed, &keys[0], &keys[1], &err).await;
        }
        let flag = (keys[0].as_str(), keys[1].as_str());
        if let Some(refusal) = unmet_rules(
            &console,
            &signed,
            flag,
            Some(&env),
            comment.as_deref(),
            form.confirmed,
        )
        .await
        {
            return refusal;
        }
    }
    apply(
        &console,
        &signed,
        &keys,
        semantic_patch(Some(env.clone()), instructions, comment),
        ExpectedVersion::Environment {
            key: env,
            version: form.version,
        },
        "serving",
    )
    .await
}

/// The archive (or restore) form.
#[derive(Debug, Deserialize)]
pub(crate) struct ArchiveForm {
    csrf: Option<String>,
    version: i64,
    /// `true` archives, `false` restores.
    archived: bool,
    comment: Option<String>,
    /// The confirmation's checkbox (when an environment asks for one).
    #[serde(default)]
    confirmed: bool,
}

/// `POST /projects/{project}/flags/{flag}/archived`: archives or restores the flag.
pub(crate) async fn save_archived(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String)>,
    form: web::Form<ArchiveForm>,
) -> HttpResponse {
    let form = form.into_inner();
    let (project, flag) = path.into_inner();
    let (signed, keys) =
        match change_request(&req, &console, vec![project, flag], form.csrf.as_deref()).await {
            Ok(checked) => checked,
            Err(answer) => return answer,
        };
    // Archiving (or restoring) changes the flag in every environment: each one's rules apply.
    if let Err(err) = signed.caller.may_in(use_case::PatchFlag, &keys[0]) {
        return refused(&console, &signed, &keys[0], &keys[1], &err).await;
    }
    let comment = free_text(form.comment);
    if let Some(refusal) = unmet_rules(
        &console,
        &signed,
        (&keys[0], &keys[1]),
        None,
        comment.as_deref(),
        form.confirmed,
    )
    .await
    {
        return refusal;
    }
    let (instruction, done) = if form.archived {
        (Instruction::ArchiveFlag, "archived")
    } else {
        (Instruction::RestoreFlag, "restored")
    };
    apply(
        &console,
        &signed,
        &keys,
        SemanticPatch {
            environment_key: None,
            comment,
            instructions: vec![instruction],
        },
        ExpectedVersion::Flag(form.version),
        done,
    )
    .await
}

/// The copy form, read from its pairs: `from`, `to`, `comment`, `confirmed`, and the version of
/// each environment's configuration the page showed as `version.{key}` (its CSRF token is read
/// apart, [`CopyForm::csrf_of`]).
#[derive(Debug, Default)]
pub(crate) struct CopyForm {
    from: String,
    to: String,
    comment: Option<String>,
    confirmed: bool,
    versions: Vec<(String, i64)>,
}

impl CopyForm {
    /// The form from its pairs; a field sent twice, or a version that is no number, is an
    /// error (as for the other forms).
    fn of(pairs: Vec<(String, String)>) -> Result<Self, String> {
        let mut form = Self::default();
        let mut seen: Vec<String> = Vec::new();
        for (name, value) in pairs {
            if seen.contains(&name) {
                return Err(format!(
                    "The form could not be read: duplicate field `{name}`."
                ));
            }
            seen.push(name.clone());
            match name.as_str() {
                "csrf" => {}
                "from" => form.from = value,
                "to" => form.to = value,
                "comment" => form.comment = Some(value),
                "confirmed" => form.confirmed = value == "true",
                _ => {
                    if let Some(env) = name.strip_prefix("version.") {
                        let version = value.parse().map_err(|_| {
                            format!("The form could not be read: '{value}' is not a version.")
                        })?;
                        form.versions.push((env.to_owned(), version));
                    }
                }
            }
        }
        Ok(form)
    }

    /// The CSRF token of `pairs`, if it has exactly one (read apart from the rest of the form, so
    /// that a form that cannot be read is still answered as coming from the page or not).
    fn csrf_of(pairs: &[(String, String)]) -> Option<String> {
        let mut tokens = pairs.iter().filter(|(name, _)| name == "csrf");
        match (tokens.next(), tokens.next()) {
            (Some((_, token)), None) => Some(token.clone()),
            _ => None,
        }
    }

    fn version_of(&self, env: &str) -> Option<i64> {
        self.versions
            .iter()
            .find(|(key, _)| key == env)
            .map(|(_, version)| *version)
    }
}

/// `POST /projects/{project}/flags/{flag}/copy`: copies one environment's configuration onto
/// another (both at the versions the page showed).
pub(crate) async fn copy_config(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String)>,
    form: web::Form<Vec<(String, String)>>,
) -> HttpResponse {
    let pairs = form.into_inner();
    let csrf = CopyForm::csrf_of(&pairs);
    let form = CopyForm::of(pairs);
    let (project, flag) = path.into_inner();
    let (signed, keys) =
        match change_request(&req, &console, vec![project, flag], csrf.as_deref()).await {
            Ok(checked) => checked,
            Err(answer) => return answer,
        };
    let form = match form {
        Ok(form) => form,
        Err(problem) => return crate::pages::bad_input(&signed, &problem),
    };
    let (Some(from_version), Some(to_version)) =
        (form.version_of(&form.from), form.version_of(&form.to))
    else {
        return crate::pages::bad_input(
            &signed,
            "Choose two of the flag's environments (the form names one it did not show).",
        );
    };
    // Who may not copy learns that first, before what the environments ask.
    if let Err(err) = signed.caller.may_in(use_case::CopyFlagConfig, &keys[0]) {
        return refused(&console, &signed, &keys[0], &keys[1], &err).await;
    }
    let comment = free_text(form.comment.clone());
    if let Some(refusal) = unmet_rules(
        &console,
        &signed,
        (&keys[0], &keys[1]),
        Some(&form.to),
        comment.as_deref(),
        form.confirmed,
    )
    .await
    {
        return refusal;
    }
    let post = FlagCopyPost {
        source: CopyEnvironment {
            key: form.from.clone(),
            current_version: Some(from_version),
        },
        target: CopyEnvironment {
            key: form.to.clone(),
            current_version: Some(to_version),
        },
        comment,
        included_actions: None,
        excluded_actions: None,
    };
    let (project, flag) = (keys[0].clone(), keys[1].clone());
    let caller = signed.caller.clone();
    let copied = call(&console, move |s| {
        let permit = caller.may_in(use_case::CopyFlagConfig, &project)?;
        s.flags().copy_flag_config(&permit, &project, &flag, &post)
    })
    .await;
    match copied {
        Ok(view)
            if view
                .flag
                .environments
                .get(&form.to)
                .is_some_and(|config| config.version == to_version) =>
        {
            back_to_flag(&keys[0], &keys[1], "unchanged")
        }
        Ok(_) => back_to_flag(&keys[0], &keys[1], "copied"),
        Err(err) => refused(&console, &signed, &keys[0], &keys[1], &err).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::fixture;

    #[test]
    fn tags_are_trimmed_and_repeats_dropped() {
        assert_eq!(parse_tags(" ui, beta ,,ui, "), vec!["ui", "beta"]);
        assert!(parse_tags("  ").is_empty());
    }

    #[test]
    fn only_what_the_form_changed_becomes_an_instruction() {
        let fx = fixture();
        let flag = &fx.flags.items[0].flag;
        let same = settings_instructions(flag, &flag.name, &flag.description, &flag.tags);
        assert!(same.is_empty(), "{same:?}");
        let changed = settings_instructions(flag, "Renamed", "", &["beta".to_owned()]);
        assert_eq!(
            changed,
            vec![
                Instruction::UpdateName {
                    value: "Renamed".into()
                },
                Instruction::RemoveTags {
                    values: vec!["ui".into()]
                },
                Instruction::AddTags {
                    values: vec!["beta".into()]
                },
            ]
        );
    }

    #[test]
    fn the_copy_form_reads_each_environments_version() {
        let form = CopyForm::of(vec![
            ("from".into(), "test".into()),
            ("to".into(), "production".into()),
            ("version.test".into(), "3".into()),
            ("version.production".into(), "7".into()),
        ])
        .unwrap();
        assert_eq!(form.version_of("test"), Some(3));
        assert_eq!(form.version_of("production"), Some(7));
        assert_eq!(form.version_of("staging"), None);
        assert!(CopyForm::of(vec![("version.test".into(), "x".into())]).is_err());
        let twice = vec![
            ("from".into(), "test".into()),
            ("from".into(), "production".into()),
        ];
        assert!(CopyForm::of(twice).is_err());
        let csrf = |token: &str| ("csrf".to_owned(), token.to_owned());
        assert_eq!(CopyForm::csrf_of(&[csrf("a")]), Some("a".into()));
        assert_eq!(CopyForm::csrf_of(&[csrf("a"), csrf("b")]), None);
    }
}
