//! A flag's history from the audit log: who, when, the comment, and what changed.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::audit::{AuditEntry, AuditPage, AuditQuery};
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::Value;
use service::use_case;
use service::ProjectWithEnvironments;

use crate::pages::layout;
use crate::session;
use crate::signed::{call, Signed};
use crate::text::{encode, utc};
use crate::{error_page, page, Console};

/// Entries per page (the audit log's largest page).
const ENTRIES_PER_PAGE: u32 = 20;

/// Changed values listed per entry before "and N more".
const CHANGES_SHOWN: usize = 40;

/// Fields that change with every change, or say nothing to a person: left out of the diff.
const UNINTERESTING: [&str; 10] = [
    "_links",
    "_site",
    "_summary",
    "_version",
    "_access",
    "version",
    "lastModified",
    "_lastModified",
    "salt",
    "sel",
];

/// One changed value: where, before, after (`None` where it did not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) path: String,
    pub(crate) before: Option<String>,
    pub(crate) after: Option<String>,
}

/// What differs between `before` and `after`, leaf by leaf (arrays of different lengths, and
/// values of different kinds, as a whole), without the uninteresting fields.
pub(crate) fn diff(before: &Value, after: &Value) -> Vec<Change> {
    let mut changes = Vec::new();
    walk("", Some(before), Some(after), &mut changes);
    changes
}

fn walk(path: &str, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Change>) {
    match (before, after) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                if UNINTERESTING.contains(&key.as_str()) {
                    continue;
                }
                let inner = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                walk(&inner, a.get(key), b.get(key), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                walk(&format!("{path}[{i}]"), Some(x), Some(y), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Change {
            path: path.to_owned(),
            before: a.map(ToString::to_string),
            after: b.map(ToString::to_string),
        }),
    }
}

/// Characters of a changed value shown before "…" (a description can be a megabyte).
const VALUE_SHOWN: usize = 300;

/// A changed value as the history shows it: "—" where there was none, a long one cut short.
fn shortened(value: Option<&str>) -> String {
    match value {
        None => "—".to_owned(),
        Some(text) if text.chars().count() > VALUE_SHOWN => {
            let cut: String = text.chars().take(VALUE_SHOWN).collect();
            format!("{cut}… ({} characters in all)", text.chars().count())
        }
        Some(text) => text.to_owned(),
    }
}

/// The history page's query string.
#[derive(Debug, Deserialize)]
pub(crate) struct HistoryQuery {
    /// Only entries before this time (epoch ms): the next page.
    before: Option<i64>,
    /// With `before`, entries of that millisecond below this `_id` too (the next page's cursor).
    #[serde(rename = "beforeId")]
    before_id: Option<String>,
}

/// `GET /projects/{project}/flags/{flag}/history`.
pub(crate) async fn show(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<(String, String)>,
    query: web::Query<HistoryQuery>,
) -> HttpResponse {
    let (signed, project_key, flag_key) =
        match session::flag_page_request(&req, &console, path).await {
            Ok(request) => request,
            Err(answer) => return answer,
        };
    let caller = signed.caller.clone();
    let before = query.before;
    let before_id = query
        .before_id
        .clone()
        .filter(|id| domain::id::AuditEntryId::parse(id).is_ok() && before.is_some());
    let loaded = call(&console, move |s| {
        let project =
            s.projects()
                .get_project(&caller.may(use_case::GetProject)?, &project_key, true)?;
        let flag = s.flags().get_flag(
            &caller.may(use_case::GetFlag)?,
            &project_key,
            &flag_key,
            &[],
        )?;
        let query = AuditQuery {
            before,
            before_id,
            after: None,
            q: None,
            spec: Some(format!(
                "proj/{}:env/*:flag/{}",
                project.project.key.as_str(),
                flag.flag.key.as_str()
            )),
            limit: ENTRIES_PER_PAGE,
        };
        let entries = s
            .audit_log()
            .list_audit_log_in_detail(&caller.may(use_case::ReadAuditLog)?, &query)?;
        Ok((project, flag.flag.name, flag.flag.key.to_string(), entries))
    })
    .await;
    match loaded {
        Ok((project, name, key, entries)) => page(
            StatusCode::OK,
            history_page(&signed, &project, &name, &key, &entries),
        ),
        Err(err) => error_page(&err, Some(&signed)),
    }
}

/// Who made an entry's change.
fn who(entry: &AuditEntry) -> String {
    let token = entry
        .token
        .as_ref()
        .map(|t| format!(" (token {})", t.name))
        .unwrap_or_default();
    match (&entry.member, &entry.token) {
        (Some(member), _) => format!("{}{token}", member.email),
        (None, Some(t)) if t.service_token => format!("a service token{token}"),
        // A member the reader may not see.
        (None, Some(_)) => format!("a member{token}"),
        (None, None) => "someone".to_owned(),
    }
}

/// The history page.
pub(crate) fn history_page(
    signed: &Signed,
    project: &ProjectWithEnvironments,
    name: &str,
    key: &str,
    history: &AuditPage,
) -> Markup {
    let entries = &history.entries;
    let project_key = project.project.key.as_str();
    let flags_link = format!("/projects/{}/flags", encode(project_key));
    let flag_link = format!("{flags_link}/{}", encode(key));
    let content = html! {
        nav.crumbs aria-label="Breadcrumb" {
            a href="/projects" { "Projects" } " / " a href=(flags_link) { (project.project.name) }
            " / " a href=(flag_link) { (name) } " / History"
        }
        h1 { "History of " (name) }
        @if entries.is_empty() && history.next_before.is_none() { p.muted { "No changes recorded." } }
        @if entries.is_empty() && history.next_before.is_some() { p.muted { "No changes among the entries read; older ones follow." } }
        ol.history {
            @for entry in entries {
                li {
                    p {
                        time datetime=(entry.date) { (utc(entry.date)) } " · " strong { (who(entry)) } " " (entry.title_verb)
                    }
                    @if let Some(comment) = &entry.comment { blockquote { (comment) } }
                    @match (&entry.previous_version, &entry.current_version) {
                        (Some(before), Some(after)) => {
                            @let changes = diff(&before.to_value(), &after.to_value());
                            @if changes.is_empty() { p.muted { "No visible change." } }
                            @else {
                                table.diff {
                                    thead { tr { th scope="col" { "What" } th scope="col" { "Before" } th scope="col" { "After" } } }
                                    tbody {
                                        @for change in changes.iter().take(CHANGES_SHOWN) {
                                            tr {
                                                td { code { (change.path) } }
                                                td.before { code { (shortened(change.before.as_deref())) } }
                                                td.after { code { (shortened(change.after.as_deref())) } }
                                            }
                                        }
                                    }
                                }
                                @if changes.len() > CHANGES_SHOWN { p.muted { "and " (changes.len() - CHANGES_SHOWN) " more changes" } }
                            }
                        }
                        (None, Some(_)) => { p.muted { "Created." } }
                        (Some(_), None) => { p.muted { "Deleted." } }
                        (None, None) => {}
                    }
                }
            }
        }
        @if let Some((before, id)) = &history.next_before {
            p { a href={ (flag_link) "/history?before=" (before) "&beforeId=" (id) } { "Older changes" } }
        }
    };
    layout(&format!("History of {name}"), Some(signed), &content)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_diff_names_each_changed_leaf_and_skips_bookkeeping() {
        let before = json!({"name": "a", "_version": 1, "environments": {"production": {"on": false, "version": 3, "rules": []}}});
        let after = json!({"name": "a", "_version": 2, "environments": {"production": {"on": true, "version": 4, "rules": [{"x": 1}]}}});
        let changes = diff(&before, &after);
        assert_eq!(
            changes,
            vec![
                Change {
                    path: "environments.production.on".into(),
                    before: Some("false".into()),
                    after: Some("true".into()),
                },
                Change {
                    path: "environments.production.rules".into(),
                    before: Some("[]".into()),
                    after: Some(r#"[{"x":1}]"#.into()),
                },
            ]
        );
    }

    #[test]
    fn long_values_are_cut_short() {
        assert_eq!(shortened(None), "—");
        assert_eq!(shortened(Some("on")), "on");
        let long = "é".repeat(1000);
        let shown = shortened(Some(&long));
        assert!(shown.starts_with(&"é".repeat(300)));
        assert!(shown.ends_with("… (1000 characters in all)"), "{shown}");
    }

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_795_811_412_000), "2026-11-27 20:30:12 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }
}

#[cfg(test)]
mod page_tests {
    use super::*;
    use crate::fixtures::fixture;

    #[test]
    fn an_empty_history_says_so() {
        let fx = fixture();
        let html = history_page(
            &fx.owner,
            &fx.project,
            "Dark <mode>",
            "dark-mode",
            &AuditPage::default(),
        )
        .into_string();
        assert!(html.contains("No changes recorded."));
        assert!(html.contains("History of Dark &lt;mode&gt;"));
        assert!(html.contains(r#"href="/projects/shop/flags/dark-mode""#));
    }
}
