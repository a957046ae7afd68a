//! Changing a flag from its page: its settings (name, description, tags), what an environment
//! serves (off variation, fallthrough), archiving and restoring, and copying one environment's
//! configuration onto another.
//!
//! Every form carries the version its page showed, and the change applies only if the flag (or
//! the environment's configuration) still has it: a form filled in from a stale page is refused
//! (409) and the page shows the flag as it is now. A change that succeeds goes back to the page
//! with a 303 (so reloading does not send it again).

use actix_web::{web, HttpRequest, HttpResponse};
use domain::flag::{CopyEnvironment, FlagCopyPost};
use domain::instruction::{Instruction, SemanticPatch, ServeInput};
use serde::Deserialize;
use service::{use_case, ExpectedVersion, ServiceError};

use crate::flag_page::{self, Notice};
use crate::flags::{free_text, patch_flag};
use crate::pages::encode;
use crate::session::{self, call, check_form, has_control, Signed};
use crate::{error_page, page, see_other, Console};

/// What a successful change says on the page it returns to (`?done=`).
pub(crate) fn done_text(done: &str) -> Option<&'static str> {
    Some(match done {
        "settings" => "The settings were saved.",
        "serving" => "What the environment serves was saved.",
        "archived" => "The flag was archived.",
        "restored" => "The flag was restored.",
        "copied" => "The configuration was copied.",
        "unchanged" => "Nothing was changed: the form asked for no change.",
        _ => return None,
    })
}

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
    let status = crate::status_of(err);
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
    match patch_flag(console, signed, project, flag, patch, expected).await {
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
    if name != flag.name {
        instructions.push(Instruction::UpdateName {
            value: name.to_owned(),
        });
    }
    if description != flag.description {
        instructions.push(Instruction::UpdateDescription {
            value: description.to_owned(),
        });
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
    // Line breaks typed into the description are kept (a browser sends them as CR LF).
    let description = form.description.replace("\r\n", "\n");
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
    let current = match call(&console, move |s| s.get_flag(&caller, &p, &f, &[])).await {
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
    let instructions = settings_instructions(&current, &name, &description, &tags);
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
    apply(
        &console,
        &signed,
        &keys,
        semantic_patch(Some(env.clone()), instructions, form.comment),
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
    let (instruction, done) = if form.archived {
        (Instruction::ArchiveFlag, "archived")
    } else {
        (Instruction::RestoreFlag, "restored")
    };
    apply(
        &console,
        &signed,
        &keys,
        semantic_patch(None, vec![instruction], form.comment),
        ExpectedVersion::Flag(form.version),
        done,
    )
    .await
}

/// The copy form, read from its pairs: `from`, `to`, `comment`, the CSRF token, and the version
/// of each environment's configuration the page showed as `version.{key}`.
#[derive(Debug, Default)]
pub(crate) struct CopyForm {
    csrf: Option<String>,
    from: String,
    to: String,
    comment: Option<String>,
    versions: Vec<(String, i64)>,
}

impl CopyForm {
    fn of(pairs: Vec<(String, String)>) -> Result<Self, String> {
        let mut form = Self::default();
        for (name, value) in pairs {
            match name.as_str() {
                "csrf" => form.csrf = Some(value),
                "from" => form.from = value,
                "to" => form.to = value,
                "comment" => form.comment = Some(value),
                _ => {
                    if let Some(env) = name.strip_prefix("version.") {
                        let version = value
                            .parse()
                            .map_err(|_| format!("'{value}' is not a version"))?;
                        form.versions.push((env.to_owned(), version));
                    }
                }
            }
        }
        Ok(form)
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
    let form = CopyForm::of(form.into_inner());
    let csrf = form.as_ref().ok().and_then(|f| f.csrf.clone());
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
    let post = FlagCopyPost {
        source: CopyEnvironment {
            key: form.from.clone(),
            current_version: Some(from_version),
        },
        target: CopyEnvironment {
            key: form.to.clone(),
            current_version: Some(to_version),
        },
        comment: free_text(form.comment),
        included_actions: None,
        excluded_actions: None,
    };
    let (project, flag) = (keys[0].clone(), keys[1].clone());
    let caller = signed.caller.clone();
    let copied = call(&console, move |s| {
        let permit = caller.may_in(use_case::CopyFlagConfig, &project)?;
        s.copy_flag_config(&permit, &project, &flag, &post)
    })
    .await;
    match copied {
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
    }
}
