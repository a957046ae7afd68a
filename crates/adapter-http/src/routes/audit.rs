//! `/api/v2/auditlog`.

use crate::wire::link::{Link, Links};
use actix_web::{get, web, HttpRequest};
use domain::audit::AuditQuery;
use service::use_case;

use crate::error::{ApiError, ErrorBody};
use crate::middleware::Auth;
use crate::wire::{call, AuditEntries, AuditEntry, QueryParams};
use crate::AppState;

/// Lists audit entries, newest first.
#[utoipa::path(
    tag = "Audit log",
    params(
        ("before" = Option<i64>, Query, description = "Only entries strictly before this time (epoch ms)"),
        ("beforeId" = Option<String>, Query, description = "With `before`: entries of that very millisecond whose `_id` is below this one are listed too (the cursor a `next` link carries, so that a page ending inside one millisecond loses none of it)"),
        ("after" = Option<i64>, Query, description = "Only entries strictly after this time (epoch ms)"),
        ("q" = Option<String>, Query, description = "Substring of the entry's name or description"),
        ("spec" = Option<String>, Query, description = "Resource specifier with `*` globs, e.g. `proj/*:env/production:flag/*`"),
        ("limit" = Option<u32>, Query, description = "Entries per page: 1..20 (as the reference documents; above 20: 400), default 10"),
    ),
    responses((status = 200, body = AuditEntries))
)]
#[get("/auditlog")]
pub async fn list_audit_log(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    req: HttpRequest,
) -> Result<web::Json<AuditEntries>, ApiError> {
    let params = QueryParams::of(&req);
    let query = AuditQuery::parse(
        params.get("before"),
        params.get("after"),
        params.get("q"),
        params.get("spec"),
        params.get("limit"),
    )?
    .with_before_id(params.get("beforeId"))?;
    let page = call(&state, move |s| {
        s.audit_log()
            .page_audit_log(&caller.may(use_case::ReadAuditLog)?, &query)
    })
    .await?;
    let mut links = Links::from([(
        "self".to_owned(),
        Link::api(format!("{}?{}", req.path(), req.query_string())),
    )]);
    // Whenever the store stopped before the end: a page may hold fewer entries than `limit`
    // (the caller may read only some; the store reads a bounded number per request).
    if let Some(next_before) = page.next_before {
        let kept: Vec<(String, String)> = form_urlencoded::parse(req.query_string().as_bytes())
            .into_owned()
            .filter(|(name, _)| name != "before" && name != "beforeId")
            .collect();
        let mut next = form_urlencoded::Serializer::new(String::new());
        for (name, value) in &kept {
            next.append_pair(name, value);
        }
        next.append_pair("before", &next_before.0.to_string());
        next.append_pair("beforeId", &next_before.1);
        links.insert(
            "next".to_owned(),
            Link::api(format!("{}?{}", req.path(), next.finish())),
        );
    }
    Ok(web::Json(AuditEntries {
        items: page.entries.into_iter().map(AuditEntry::from).collect(),
        links,
    }))
}

/// One audit entry, with `delta` (the patch or instructions sent), `previousVersion` and
/// `currentVersion` (the resource before and after, secrets masked).
#[utoipa::path(
    tag = "Audit log",
    params(("id" = String, Path, description = "Entry `_id`")),
    responses((status = 200, body = AuditEntry), (status = 404, body = ErrorBody))
)]
#[get("/auditlog/{id}")]
pub async fn get_audit_entry(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<String>,
) -> Result<web::Json<AuditEntry>, ApiError> {
    let id = path.into_inner();
    let entry = call(&state, move |s| {
        s.audit_log()
            .get_audit_entry(&caller.may(use_case::ReadAuditLog)?, &id)
    })
    .await?;
    Ok(web::Json(AuditEntry::from(entry)))
}
