//! The OpenAPI document, generated from the route registrations and completed with what every
//! operation shares: the `ApiKey` security scheme, the `Svc-API-Version` header, and the error
//! responses the middleware can produce.

use actix_web::http::Method;
use domain::version::ApiVersion;
use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, Required, ResponseBuilder};
use utoipa::OpenApi as _;
use utoipa_actix_web::scope::{self, Scope};
use utoipa_actix_web::AppExt;

use crate::routes::{
    audit, caller, environments, evaluations, flags, members, projects, roles, root, segments,
    statuses, teams, tokens, webhooks,
};
use crate::{ErrorBody, Route};

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "flagsvc",
        description = "Feature-flag management: projects, environments, flags, segments, account members and access tokens. \
            Every request but the root and this document needs `Authorization: <access token>`. \
            Checks run in this order: route (404; a method a path does not list: 405 with `Allow`), \
            authentication (401), rate limit (429), `Svc-API-Version` (400), permission (403), body, existence (404), conflict (409). \
            CORS preflights (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) are answered for the origins \
            the server is configured with (204; other origins: 403) and are not listed as operations.",
        version = "20240415"
    ),
    components(schemas(
        ErrorBody,
        crate::routes::webhooks::WebhookDeliveryPayload,
        crate::wire::ResourceAccess
    )),
    tags(
        (name = "Projects"), (name = "Environments"), (name = "Feature flags"),
        (name = "Feature flags (beta)", description = "Beta routes: every call needs `Svc-API-Version: beta`, else 403"),
        (name = "Segments"), (name = "Access tokens"), (name = "Account members"), (name = "Audit log"), (name = "Webhooks"), (name = "Custom roles"), (name = "Teams"), (name = "Other")
    )
)]
struct BaseDoc;

/// Every route under `/api/v2`, registered once for both the app and the document.
pub(crate) fn api_scope() -> Scope<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    scope::scope("/api/v2")
        .service(root::root)
        .service(root::versions)
        .service(root::openapi)
        .service(caller::caller_identity)
        .service(projects::list_projects)
        .service(projects::create_project)
        .service(projects::get_project)
        .service(projects::patch_project)
        .service(projects::delete_project)
        .service(environments::list_environments)
        .service(environments::create_environment)
        .service(environments::get_environment)
        .service(environments::patch_environment)
        .service(environments::delete_environment)
        .service(environments::reset_sdk_key)
        .service(environments::reset_mobile_key)
        .service(flags::list_flags)
        .service(flags::create_flag)
        .service(flags::get_flag)
        .service(flags::patch_flag)
        .service(flags::delete_flag)
        .service(flags::copy_flag)
        .service(flags::dependent_flags)
        .service(statuses::list_flag_statuses)
        .service(statuses::get_flag_status)
        .service(statuses::flag_status_across_environments)
        .service(evaluations::evaluate_flags)
        .service(evaluations::explain_flag)
        .service(segments::list_segments)
        .service(segments::create_segment)
        .service(segments::get_segment)
        .service(segments::patch_segment)
        .service(segments::delete_segment)
        .service(tokens::list_tokens)
        .service(tokens::create_token)
        .service(tokens::get_token)
        .service(tokens::delete_token)
        .service(tokens::patch_token)
        .service(tokens::reset_token)
        .service(members::list_members)
        .service(members::invite_members)
        .service(members::get_member)
        .service(members::patch_member)
        .service(members::delete_member)
        .service(members::add_member_to_teams)
        .service(audit::list_audit_log)
        .service(audit::get_audit_entry)
        .service(roles::list_custom_roles)
        .service(roles::create_custom_role)
        .service(roles::get_custom_role)
        .service(roles::patch_custom_role)
        .service(roles::delete_custom_role)
        .service(teams::list_teams)
        .service(teams::create_team)
        .service(teams::get_team)
        .service(teams::patch_team)
        .service(teams::delete_team)
        .service(webhooks::list_webhooks)
        .service(webhooks::create_webhook)
        .service(webhooks::get_webhook)
        .service(webhooks::patch_webhook)
        .service(webhooks::delete_webhook)
        .service(webhooks::webhook_deliveries)
}

const PUBLIC: [&str; 2] = ["/api/v2", "/api/v2/openapi.json"];

/// The most entries of one audit-log page (the reference documents 1..20).
const AUDIT_MAX_LIMIT: u32 = 20;

/// The sort fields each list accepts, by path.
fn sort_fields(path: &str) -> Option<Vec<&'static str>> {
    use domain::query::{
        CUSTOM_ROLE_SORTS, ENVIRONMENT_SORTS, FLAG_SORTS, MEMBER_SORTS, PROJECT_SORTS,
        SEGMENT_SORTS,
    };
    fn names<F>(sorts: &[(&'static str, F)]) -> Vec<&'static str> {
        sorts.iter().map(|(name, _)| *name).collect()
    }
    Some(match path {
        "/api/v2/projects" => names(&PROJECT_SORTS),
        "/api/v2/projects/{projectKey}/environments" => names(&ENVIRONMENT_SORTS),
        "/api/v2/flags/{projectKey}" => names(&FLAG_SORTS),
        "/api/v2/members" => names(&MEMBER_SORTS),
        "/api/v2/segments/{projectKey}/{environmentKey}" => names(&SEGMENT_SORTS),
        // Teams are listed as custom roles are (`domain::query::TeamQuery`).
        "/api/v2/roles" | "/api/v2/teams" => names(&CUSTOM_ROLE_SORTS),
        _ => return None,
    })
}

fn string_enum(
    values: impl IntoIterator<Item = String>,
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(values))
        .into()
}

fn integer(
    format: utoipa::openapi::KnownFormat,
    minimum: u32,
    maximum: Option<u32>,
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Integer)
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(format)))
        .minimum(Some(minimum))
        .maximum(maximum)
        .into()
}

/// The exact values the list parameters take: `limit` (at least 1; a maximum only where a
/// larger value is refused, not capped), `offset` (at least 0), `sort` (the fields and their
/// `-` forms) and `expand`.
fn constrain_list_parameters(path: &str, operation: &mut Operation) {
    for parameter in operation.parameters.iter_mut().flatten() {
        if !matches!(parameter.parameter_in, ParameterIn::Query) {
            continue;
        }
        match parameter.name.as_str() {
            "limit" => {
                let maximum = (path == "/api/v2/auditlog").then_some(AUDIT_MAX_LIMIT);
                parameter.schema = Some(integer(utoipa::openapi::KnownFormat::Int32, 1, maximum));
            }
            "offset" => {
                parameter.schema = Some(integer(utoipa::openapi::KnownFormat::Int64, 0, None));
            }
            "sort" => {
                if let Some(fields) = sort_fields(path) {
                    let values = fields
                        .iter()
                        .map(|f| (*f).to_owned())
                        .chain(fields.iter().map(|f| format!("-{f}")));
                    parameter.schema = Some(string_enum(values));
                }
            }
            "expand" if path.starts_with("/api/v2/projects") => {
                parameter.schema = Some(string_enum(["environments".to_owned()]));
            }
            "expand" if path.starts_with("/api/v2/flags/") => {
                parameter.schema = Some(string_enum(["_access".to_owned()]));
            }
            _ => {}
        }
    }
}

fn error_response(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
        .into()
}

fn version_header() -> Parameter {
    ParameterBuilder::new()
        .name("Svc-API-Version")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "`20240415` (current), `20220603` or `beta`, exactly (letter case counts; whitespace around the value is ignored); \
             default: the token's `defaultApiVersion` (public routes: `20240415`). Any other value is a 400, \
             checked after authentication: a request without a valid token gets 401 whatever this header holds.",
        ))
        .schema(Some(string_enum(
            ApiVersion::HEADER_VALUES.iter().map(|v| (*v).to_owned()),
        )))
        .build()
}

fn complete(path: &str, operation: &mut Operation, has_body: bool, writes: bool) {
    let responses = &mut operation.responses.responses;
    let mut add = |status: &str, description: &str| {
        responses
            .entry(status.to_owned())
            .or_insert_with(|| error_response(description));
    };
    add(
        "400",
        "Invalid request: bad parameter, filter, body or Svc-API-Version",
    );
    if has_body {
        add(
            "408",
            "The body did not arrive within the body timeout (the connection is closed)",
        );
        add("413", "The body is larger than the limit");
        add("415", "The body is not JSON");
    }
    if writes {
        // Every write retries a unit of work that lost a race a few times, then gives up.
        add(
            "409",
            "A concurrent change got in the way and retries did not get past it; retry",
        );
    }
    if !PUBLIC.contains(&path) {
        // Authentication reads the store too.
        add(
            "503",
            "The store cannot be reached or did not answer in time; retry later",
        );
        add(
            "401",
            "No access token, an unknown one, or an environment key instead of a token (whatever Svc-API-Version holds)",
        );
        add("403", "The token's role does not allow this");
        add("429", "Rate limited; see Retry-After and X-Ratelimit-Reset");
        operation.security = Some(vec![SecurityRequirement::new(
            "ApiKey",
            Vec::<String>::new(),
        )]);
    }
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(version_header());
}

/// A JSON Patch body (the array form of a PATCH's `application/json` content) has at most
/// [`domain::patch::MAX_OPERATIONS`] operations: `maxItems`.
fn limit_patch_operations(operation: &mut Operation) {
    let content = operation
        .request_body
        .as_mut()
        .and_then(|body| body.content.get_mut("application/json"));
    if let Some(utoipa::openapi::RefOr::T(utoipa::openapi::schema::Schema::Array(array))) =
        content.and_then(|content| content.schema.as_mut())
    {
        array.max_items = Some(domain::patch::MAX_OPERATIONS);
    }
}

/// The complete document.
pub(crate) fn document() -> OpenApi {
    let (_, mut doc) = actix_web::App::new()
        .into_utoipa_app()
        .openapi(BaseDoc::openapi())
        .service(api_scope())
        .split_for_parts();
    for (path, item) in doc.paths.paths.iter_mut() {
        for (operation, has_body, writes) in [
            (&mut item.get, false, false),
            (&mut item.post, true, true),
            (&mut item.put, true, true),
            (&mut item.patch, true, true),
            (&mut item.delete, false, true),
        ] {
            if let Some(operation) = operation {
                complete(path, operation, has_body, writes);
                constrain_list_parameters(path, operation);
            }
        }
        if let Some(operation) = &mut item.patch {
            limit_patch_operations(operation);
        }
    }
    let components = doc.components.get_or_insert_with(Default::default);
    // Instructions are told apart by `kind`.
    for name in ["Instruction", "SegmentInstruction", "TeamInstruction"] {
        if let Some(utoipa::openapi::RefOr::T(utoipa::openapi::schema::Schema::OneOf(one_of))) =
            components.schemas.get_mut(name)
        {
            one_of.discriminator = Some(utoipa::openapi::Discriminator::new("kind"));
        }
    }
    components.add_security_scheme(
        "ApiKey",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            "Authorization",
            "The access token itself (a leading `Bearer ` is tolerated)",
        ))),
    );
    doc
}

/// The document as served: [`document`] with the constraints of [`crate::contract`].
pub(crate) fn constrained(doc: &OpenApi) -> Result<serde_json::Value, serde_json::Error> {
    let mut value = serde_json::to_value(doc)?;
    crate::contract::constrain(&mut value);
    Ok(value)
}

/// The routes of a document.
pub(crate) fn routes(doc: &OpenApi) -> Vec<Route> {
    let mut routes = Vec::new();
    for (path, item) in &doc.paths.paths {
        for (method, operation) in [
            (Method::GET, &item.get),
            (Method::POST, &item.post),
            (Method::PUT, &item.put),
            (Method::PATCH, &item.patch),
            (Method::DELETE, &item.delete),
        ] {
            if let Some(operation) = operation {
                let query = operation
                    .parameters
                    .iter()
                    .flatten()
                    .filter(|p| matches!(p.parameter_in, ParameterIn::Query))
                    .map(|p| p.name.clone())
                    .collect();
                routes.push(Route {
                    method,
                    path: path.clone(),
                    query,
                });
            }
        }
    }
    routes
}
