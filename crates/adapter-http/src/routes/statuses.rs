//! `/api/v2/flag-statuses/{projectKey}/{environmentKey}` and `/api/v2/flag-status/{projectKey}/{flagKey}`.
//!
//! flagsvc receives no evaluation data, so a status is derived from each configuration and its
//! dates (see [`domain::flag::flag_status`]); `lastRequested` is always `null`.

use service::use_case;
use std::collections::BTreeMap;

use crate::wire::link::{Link, Links};
use actix_web::{get, web, HttpRequest};
use domain::flag::FlagStatusName;
use serde::Serialize;

use crate::error::{ApiError, ErrorBody};
use crate::middleware::Auth;
use crate::wire::{call, QueryParams};
use crate::AppState;

/// The status of a flag in one environment.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlagStatusRep {
    /// `new`, `inactive`, `active` or `launched` (see docs/api.md, "Flag status").
    #[schema(value_type = crate::wire::model::FlagStatusName)]
    pub name: FlagStatusName,
    /// When an SDK last evaluated the flag: always `null`, flagsvc receives no evaluations.
    #[schema(required = true, format = DateTime)]
    pub last_requested: Option<String>,
    /// `parent` (the statuses of the environment) and `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

/// The status of every flag of a project in one environment.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FeatureFlagStatuses {
    /// One status per flag, by flag key; the flag's key ends each item's `self` link.
    pub items: Vec<FlagStatusRep>,
    /// `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

/// The status of a flag in one environment (an entry of `FeatureFlagStatusAcrossEnvironments`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeatureFlagStatus {
    /// `new`, `inactive`, `active` or `launched`.
    #[schema(value_type = crate::wire::model::FlagStatusName)]
    pub name: FlagStatusName,
    /// Always `null`: flagsvc receives no evaluations.
    #[schema(required = true, format = DateTime)]
    pub last_requested: Option<String>,
}

/// The status of one flag in each environment of its project.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FeatureFlagStatusAcrossEnvironments {
    /// By environment key.
    pub environments: BTreeMap<String, FeatureFlagStatus>,
    /// The flag's key.
    pub key: String,
    /// `parent` (the flag) and `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

fn status_links(project: &str, environment: &str, flag: &str) -> Links {
    Links::from([
        (
            "parent".to_owned(),
            Link::api(format!("/api/v2/flag-statuses/{project}/{environment}")),
        ),
        (
            "self".to_owned(),
            Link::api(format!(
                "/api/v2/flag-statuses/{project}/{environment}/{flag}"
            )),
        ),
    ])
}

/// The status of every flag of the project in one environment, by flag key (all flags, in
/// one response: the reference pages neither this list nor its items).
#[utoipa::path(
    tag = "Feature flags",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("environmentKey" = String, Path, description = "Environment key"),
    ),
    responses(
        (status = 200, body = FeatureFlagStatuses),
        (status = 404, description = "Unknown project or environment", body = ErrorBody),
    )
)]
#[get("/flag-statuses/{projectKey}/{environmentKey}")]
pub async fn list_flag_statuses(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
) -> Result<web::Json<FeatureFlagStatuses>, ApiError> {
    let (project, environment) = path.into_inner();
    let (p, e) = (project.clone(), environment.clone());
    let statuses = call(&state, move |s| {
        s.flag_statuses().environment_flag_statuses(
            &caller.may(use_case::ReadFlagStatuses)?,
            &p,
            &e,
        )
    })
    .await?;
    Ok(web::Json(FeatureFlagStatuses {
        items: statuses
            .into_iter()
            .map(|status| FlagStatusRep {
                name: status.name,
                last_requested: None,
                links: status_links(&project, &environment, &status.flag_key),
            })
            .collect(),
        links: Links::from([(
            "self".to_owned(),
            Link::api(format!("/api/v2/flag-statuses/{project}/{environment}")),
        )]),
    }))
}

/// The status of one flag in one environment.
#[utoipa::path(
    tag = "Feature flags",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("environmentKey" = String, Path, description = "Environment key"),
        ("flagKey" = String, Path, description = "Flag key"),
    ),
    responses(
        (status = 200, body = FlagStatusRep),
        (status = 404, description = "Unknown project, environment or flag", body = ErrorBody),
    )
)]
#[get("/flag-statuses/{projectKey}/{environmentKey}/{flagKey}")]
pub async fn get_flag_status(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String, String)>,
) -> Result<web::Json<FlagStatusRep>, ApiError> {
    let (project, environment, flag) = path.into_inner();
    let (p, e, f) = (project.clone(), environment.clone(), flag.clone());
    let status = call(&state, move |s| {
        s.flag_statuses()
            .flag_status(&caller.may(use_case::ReadFlagStatuses)?, &p, &e, &f)
    })
    .await?;
    Ok(web::Json(FlagStatusRep {
        name: status.name,
        last_requested: None,
        links: status_links(&project, &environment, &flag),
    }))
}

/// The status of one flag in every environment of its project, or in those named by `env`
/// (unknown environment keys are left out, as in `GET /flags/{projectKey}/{flagKey}`).
#[utoipa::path(
    tag = "Feature flags",
    params(
        ("projectKey" = String, Path, description = "Project key"),
        ("flagKey" = String, Path, description = "Flag key"),
        ("env" = Option<Vec<String>>, Query, description = "Only these environments (repeatable, or comma-separated)"),
    ),
    responses(
        (status = 200, body = FeatureFlagStatusAcrossEnvironments),
        (status = 404, description = "Unknown project or flag", body = ErrorBody),
    )
)]
#[get("/flag-status/{projectKey}/{flagKey}")]
pub async fn flag_status_across_environments(
    state: web::Data<AppState>,
    Auth(caller): Auth,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<web::Json<FeatureFlagStatusAcrossEnvironments>, ApiError> {
    let environments = QueryParams::of(&req).list("env")?;
    let (project, flag) = path.into_inner();
    let (p, f) = (project.clone(), flag.clone());
    let statuses = call(&state, move |s| {
        s.flag_statuses().flag_status_across_environments(
            &caller.may(use_case::ReadFlagStatuses)?,
            &p,
            &f,
            &environments,
        )
    })
    .await?;
    Ok(web::Json(FeatureFlagStatusAcrossEnvironments {
        environments: statuses
            .into_iter()
            .map(|status| {
                (
                    status.environment_key,
                    FeatureFlagStatus {
                        name: status.name,
                        last_requested: None,
                    },
                )
            })
            .collect(),
        links: Links::from([
            (
                "parent".to_owned(),
                Link::api(format!("/api/v2/flags/{project}/{flag}")),
            ),
            (
                "self".to_owned(),
                Link::api(format!("/api/v2/flag-status/{project}/{flag}")),
            ),
        ]),
        key: flag,
    }))
}
