//! Developer tasks: `cargo xtask <task>`.
//!
//! - `test`: checks the dependency rule, finds or starts a PostgreSQL server, runs every test of
//!   the workspace against it (and SQLite). Extra arguments go to `cargo test`.
//! - `check-deps`: fails if `domain`, `ports` or `service` reach diesel, r2d2, actix or tokio,
//!   `adapter-web` reaches diesel, r2d2, `adapter-sql` or `adapter-http` (the console calls the
//!   use cases, never the database or the REST API; nor does `adapter-sdk`),
//!   a crate other than `adapter-http` depends on utoipa (`domain` only through its optional
//!   `openapi` feature, which only `adapter-http` turns on), or a crate other than `adapter-http`
//!   writes an API path (`/api/v2`).
//! - `doc`: builds the docs of `domain` (others depend on that crate alone; also with its
//!   `openapi` feature), `ports` and `service` with warnings as errors.
//! - `openapi`: prints the OpenAPI document.
//! - `roles`: rewrites `docs/roles.md` from the permission table in `domain`.
//! - `bench`: throughput, latency, CPU per request and memory of the release binary under load,
//!   beside pgbench on the same PostgreSQL; writes `docs/benchmarks.md` (see `bench --help`).
//! - `conformance`: OpenFeature's SDKs over OFREP and the original's server-side SDKs, then
//!   schemathesis against the served OpenAPI document, on SQLite and PostgreSQL.
//! - `differential`: the previous release's binary and the current one over HTTP, answer by
//!   answer, on fresh databases and on one the previous release wrote (`--postgres` too).

mod bench;
mod clients;
mod conformance;
mod differential;
mod openfeature;
mod postgres;
mod process;
mod sdks;
mod structure;

use std::process::ExitCode;

use process::{cargo, run};

use anyhow::{bail, Context, Result};

const FORBIDDEN_IN_CORE: [&str; 6] = [
    "diesel",
    "r2d2",
    "actix-web",
    "actix-rt",
    "actix-http",
    "tokio",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("check-deps") => check_deps()
            .and_then(|()| check_openapi_deps())
            .and_then(|()| check_locks())
            .and_then(|()| check_api_paths())
            .and_then(|()| structure::check_circles())
            .and_then(|()| structure::check_sizes())
            .and_then(|()| structure::check_background_loops())
            .and_then(|()| structure::check_one_decider())
            .and_then(|()| structure::check_use_cases_take_permits()),
        Some("doc") => doc(),
        Some("openapi") => openapi(),
        Some("roles") => roles(),
        Some("bench") => bench::bench(&args[1..], &mut cargo()),
        Some("conformance") => conformance::conformance(&mut cargo()),
        Some("differential") => differential::differential(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <test [cargo test args...] | check-deps | doc | openapi | roles | bench [--help] | conformance | differential [--base REV] [--postgres]>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The core must not reach I/O frameworks: other services depend on `domain` alone, and the use
/// cases know storage and HTTP only through ports. `adapter-memory` is held to the same rule
/// because `service` tests with it (a dev-dependency, which `-e normal` does not follow).
fn check_deps() -> Result<()> {
    for krate in ["domain", "ports", "service", "adapter-memory", "background"] {
        forbid_dependencies(krate, &FORBIDDEN_IN_CORE)?;
    }
    // The console is a driving adapter: it calls the use cases, never the database or the REST
    // API; nor does what the driving adapters share.
    forbid_dependencies("adapter-web", &FORBIDDEN_IN_CONSOLE)?;
    // So are the SDK routes: they read flag data through the use cases, never the API.
    forbid_dependencies("adapter-sdk", &FORBIDDEN_IN_CONSOLE)?;
    forbid_dependencies("driving", &FORBIDDEN_IN_CONSOLE)
}

/// What the web console must not depend on.
const FORBIDDEN_IN_CONSOLE: [&str; 5] = [
    "diesel",
    "r2d2",
    "flagsvc-adapter-sql",
    "flagsvc-adapter-http",
    "utoipa",
];

/// Fails if package `flagsvc-{krate}` depends on one of `forbidden`, directly or not, with
/// every feature on.
fn forbid_dependencies(krate: &str, forbidden: &[&str]) -> Result<()> {
    forbid_in_tree(krate, forbidden, &["--all-features"])?;
    println!("check-deps: {krate} is free of {}", forbidden.join(", "));
    Ok(())
}

/// Fails if `cargo tree -p flagsvc-{krate} -e normal` (with `features`, arguments of cargo tree)
/// lists one of `forbidden`.
fn forbid_in_tree(krate: &str, forbidden: &[&str], features: &[&str]) -> Result<()> {
    let output = cargo()
        .args([
            "tree",
            "--quiet",
            "-p",
            &format!("flagsvc-{krate}"),
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(features)
        .output()
        .context("running cargo tree")?;
    if !output.status.success() {
        bail!(
            "cargo tree -p {krate} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let tree = String::from_utf8_lossy(&output.stdout);
    let offending: Vec<&str> = tree
        .lines()
        .filter(|line| {
            forbidden
                .iter()
                .any(|f| line.split_whitespace().next() == Some(f))
        })
        .collect();
    if !offending.is_empty() {
        bail!(
            "`{krate}` ({}) must not depend on {}: found {}",
            if features.is_empty() {
                "default features"
            } else {
                "every feature"
            },
            forbidden.join(", "),
            offending.join("; ")
        );
    }
    Ok(())
}

/// The crate that owns the OpenAPI document, and the crates that speak OpenAPI.
const OPENAPI_OWNER: &str = "flagsvc-adapter-http";
const OPENAPI_CRATES: [&str; 2] = ["utoipa", "utoipa-actix-web"];

/// The package whose types derive their schemas behind a feature, the feature, and the one
/// OpenAPI crate it may reach through it.
const SCHEMA_PACKAGE: &str = "flagsvc-domain";
const SCHEMA_FEATURE: &str = "openapi";
const SCHEMA_CRATE: &str = "utoipa";

/// Only `adapter-http` depends on utoipa: it owns the wire shapes and the OpenAPI document. No
/// other crate of the workspace may reach utoipa or utoipa-actix-web, directly or through a crate
/// other than `adapter-http`, with every feature on and dev-dependencies included (`app` reaches
/// it through `adapter-http`, as it must), but for one way: `domain` derives the schemas of its
/// own types behind its optional `openapi` feature (`utoipa` an optional dependency), which only
/// `adapter-http` turns on (see [`check_schema_feature`]), so that `domain` built alone, as other
/// services build it, has no utoipa.
fn check_openapi_deps() -> Result<()> {
    let output = cargo()
        .args([
            "metadata",
            "--quiet",
            "--format-version",
            "1",
            "--all-features",
        ])
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("reading cargo metadata")?;
    let mut names = std::collections::HashMap::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        if let (Some(id), Some(name)) = (package["id"].as_str(), package["name"].as_str()) {
            names.insert(id, name);
        }
    }
    let mut dependencies = std::collections::HashMap::new();
    for node in metadata["resolve"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(id) = node["id"].as_str() {
            let deps: Vec<&str> = node["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(serde_json::Value::as_str)
                .collect();
            dependencies.insert(id, deps);
        }
    }
    let name = |id: &str| names.get(id).copied().unwrap_or(id).to_owned();
    let members: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let mut offending = vec![];
    for &member in &members {
        if name(member) == OPENAPI_OWNER {
            continue;
        }
        // Breadth first, keeping the way each crate was reached; not into other members of the
        // workspace (each is checked itself, and the owner may).
        let mut reached_from = std::collections::HashMap::from([(member, member)]);
        let mut queue = std::collections::VecDeque::from([member]);
        while let Some(id) = queue.pop_front() {
            if OPENAPI_CRATES.contains(&name(id).as_str()) {
                let mut chain = vec![name(id)];
                let mut at = id;
                while at != member {
                    at = reached_from[at];
                    chain.push(name(at));
                }
                chain.reverse();
                offending.push(chain.join(" -> "));
                continue;
            }
            for dep in dependencies.get(id).into_iter().flatten() {
                // The schema package's own optional dependency (its feature is checked below).
                let schema_feature = name(id) == SCHEMA_PACKAGE && name(dep) == SCHEMA_CRATE;
                if !schema_feature && !members.contains(dep) && !reached_from.contains_key(dep) {
                    reached_from.insert(dep, id);
                    queue.push_back(dep);
                }
            }
        }
    }
    if !offending.is_empty() {
        bail!(
            "only {OPENAPI_OWNER} may depend on {}: found {}",
            OPENAPI_CRATES.join(" or "),
            offending.join("; ")
        );
    }
    check_schema_feature(&metadata)?;
    forbid_in_tree("domain", &OPENAPI_CRATES, &[])?;
    println!(
        "check-deps: only adapter-http depends on utoipa (domain through its optional feature \
         `{SCHEMA_FEATURE}`, which only adapter-http turns on; domain's default build has none)"
    );
    Ok(())
}

/// `domain`'s utoipa is optional, only its `openapi` feature turns it on, `default` does not
/// include that feature, and no member of the workspace but `adapter-http` turns it on (by the
/// features of its dependency on `domain`, of any kind, or by a feature of its own).
fn check_schema_feature(metadata: &serde_json::Value) -> Result<()> {
    let packages: Vec<&serde_json::Value> = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let strings = |value: &serde_json::Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let Some(schema) = packages.iter().find(|p| p["name"] == SCHEMA_PACKAGE) else {
        bail!("no package {SCHEMA_PACKAGE} in cargo metadata");
    };
    let mut problems = vec![];
    for dep in schema["dependencies"].as_array().into_iter().flatten() {
        if dep["name"] == SCHEMA_CRATE && dep["optional"] != true {
            problems.push(format!(
                "{SCHEMA_PACKAGE} depends on {SCHEMA_CRATE} unconditionally"
            ));
        }
    }
    // Which of the package's features turn the dependency on, and which `default` reaches.
    let features = schema["features"].as_object().cloned().unwrap_or_default();
    for (feature, enables) in &features {
        let turns_on = strings(enables).iter().any(|e| {
            e == &format!("dep:{SCHEMA_CRATE}")
                || e == SCHEMA_CRATE
                || e.starts_with(&format!("{SCHEMA_CRATE}/"))
                || e.starts_with(&format!("{SCHEMA_CRATE}?/"))
        });
        if turns_on && feature != SCHEMA_FEATURE {
            problems.push(format!(
                "{SCHEMA_PACKAGE}'s feature `{feature}` turns on {SCHEMA_CRATE}"
            ));
        }
    }
    let mut default = vec!["default".to_owned()];
    let mut seen = std::collections::HashSet::new();
    while let Some(feature) = default.pop() {
        if feature == SCHEMA_FEATURE {
            problems.push(format!(
                "{SCHEMA_PACKAGE}'s default features include `{SCHEMA_FEATURE}`"
            ));
        }
        if seen.insert(feature.clone()) {
            default.extend(strings(
                &features.get(&feature).cloned().unwrap_or_default(),
            ));
        }
    }
    let members = strings(&metadata["workspace_members"]);
    for package in packages.iter().filter(|p| {
        p["id"]
            .as_str()
            .is_some_and(|id| members.iter().any(|m| m == id))
            && p["name"] != OPENAPI_OWNER
            && p["name"] != SCHEMA_PACKAGE
    }) {
        let name = package["name"].as_str().unwrap_or_default();
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            if dep["name"] != SCHEMA_PACKAGE {
                continue;
            }
            if strings(&dep["features"])
                .iter()
                .any(|f| f == SCHEMA_FEATURE)
            {
                problems.push(format!("{name} turns on {SCHEMA_PACKAGE}/{SCHEMA_FEATURE}"));
            }
            // `[features] x = ["domain/openapi"]` (by the name the package uses for it).
            let local = dep["rename"]
                .as_str()
                .or(dep["name"].as_str())
                .unwrap_or_default();
            let package_features = package["features"].as_object().cloned().unwrap_or_default();
            for (feature, enables) in &package_features {
                if strings(enables).iter().any(|e| {
                    e == &format!("{local}/{SCHEMA_FEATURE}")
                        || e == &format!("{local}?/{SCHEMA_FEATURE}")
                }) {
                    problems.push(format!(
                        "{name}'s feature `{feature}` turns on {SCHEMA_PACKAGE}/{SCHEMA_FEATURE}"
                    ));
                }
            }
        }
    }
    if !problems.is_empty() {
        bail!(
            "only {OPENAPI_OWNER} may turn on {SCHEMA_PACKAGE}'s optional `{SCHEMA_FEATURE}` \
             (the only way {SCHEMA_PACKAGE} reaches {SCHEMA_CRATE}): {}",
            problems.join("; ")
        );
    }
    Ok(())
}

/// Only the storage adapters create a `ports::Locked`: everything else gets one from a `lock_*`
/// method, so a write cannot forget to hold what it changes.
/// The crates that may make a `Locked` (the port that defines it, and the stores).
const LOCK_MAKERS: [&str; 5] = [
    "crates/ports/",
    "crates/adapter-sql/",
    "crates/adapter-memory/",
    "crates/adapter-postgres/",
    "crates/adapter-sqlite/",
];

fn check_locks() -> Result<()> {
    let (root, files) = structure::crate_sources()?;
    let offending: Vec<String> = files
        .iter()
        .map(|path| structure::relative(&root, path))
        .filter(|name| !LOCK_MAKERS.iter().any(|krate| name.starts_with(krate)))
        .filter(|name| {
            std::fs::read_to_string(root.join(name)).is_ok_and(|t| t.contains("assume_locked"))
        })
        .collect();
    if !offending.is_empty() {
        bail!(
            "only storage adapters may call Locked::assume_locked; found in {}",
            offending.join(", ")
        );
    }
    println!("check-deps: only storage adapters create a Locked");
    Ok(())
}

/// Only `adapter-http` writes API paths (`/api/v2`): it owns the wire shapes and their links.
/// Production sources of every other crate are checked (tests, examples and xtask may name
/// paths; so may a source file's own `#[cfg(test)]` module).
fn check_api_paths() -> Result<()> {
    let (root, files) = structure::crate_sources()?;
    let mut offending = vec![];
    for path in &files {
        let name = structure::relative(&root, path);
        // A file's unit tests may name paths, e.g. stored documents of an earlier format.
        if name.starts_with("crates/adapter-http/")
            || !name.contains("/src/")
            || structure::is_test_file(&name)
        {
            continue;
        }
        let source = std::fs::read_to_string(path)?;
        if structure::production_part(&source).contains("/api/v2") {
            offending.push(name);
        }
    }
    if !offending.is_empty() {
        bail!(
            "only adapter-http writes API paths (/api/v2); found in {}",
            offending.join(", ")
        );
    }
    println!("check-deps: only adapter-http writes API paths");
    Ok(())
}

/// The public API of `domain` is documented, and its docs build cleanly, with its `openapi`
/// feature too (built first: the documentation left in `target/doc` is the default build's).
fn doc() -> Result<()> {
    run(cargo()
        .args([
            "doc",
            "--quiet",
            "-p",
            "flagsvc-domain",
            "--features",
            "openapi",
            "--no-deps",
        ])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    run(cargo()
        .args([
            "doc",
            "--quiet",
            "-p",
            "flagsvc-domain",
            "-p",
            "flagsvc-ports",
            "-p",
            "flagsvc-service",
            "--no-deps",
        ])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    println!(
        "doc: the documentation of domain (with and without `openapi`), ports and service \
         builds without warnings"
    );
    Ok(())
}

fn test(extra: &[String]) -> Result<()> {
    check_deps()?;
    check_openapi_deps()?;
    check_locks()?;
    check_api_paths()?;
    structure::check_circles()?;
    structure::check_sizes()?;
    structure::check_background_loops()?;
    structure::check_one_decider()?;
    structure::check_use_cases_take_permits()?;
    doc()?;
    check_browser()?;
    let server = postgres::find_or_start()?;
    println!("xtask: PostgreSQL tests use {}", server.describe());
    let mut command = cargo();
    command
        .args(["test", "--workspace"])
        .args(extra)
        .env("FLAGSVC_TEST_POSTGRES_URL", server.url());
    let result = run(&mut command);
    drop(server);
    result
}

/// Where the console's end-to-end tests (`crates/app/tests/console_e2e.rs`) find the browser and
/// its WebDriver: Debian's packages.
const BROWSER: [(&str, &str); 2] = [
    ("/usr/bin/chromium", "chromium"),
    ("/usr/bin/chromedriver", "chromium-driver"),
];

/// Says what is missing when the console's end-to-end tests could not run.
fn check_browser() -> Result<()> {
    let missing: Vec<&str> = BROWSER
        .iter()
        .filter(|(path, _)| !std::path::Path::new(path).exists())
        .map(|(_, package)| *package)
        .collect();
    if !missing.is_empty() {
        bail!(
            "the web console's end-to-end tests drive Chromium over WebDriver, and {} missing: \
             install it with `apt-get install {}` (.ci/run installs it when missing)",
            if missing.len() == 1 {
                "this package is"
            } else {
                "these packages are"
            },
            missing.join(" ")
        );
    }
    println!(
        "xtask: the console's end-to-end tests use /usr/bin/chromium and /usr/bin/chromedriver"
    );
    Ok(())
}

fn openapi() -> Result<()> {
    run(cargo().args(["run", "--quiet", "-p", "flagsvc", "--example", "openapi"]))
}

/// `docs/roles.md`: the permission table, generated so that it cannot drift from the code.
fn roles() -> Result<()> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = format!(
        "# Roles\n\nWhat each built-in role may do. Generated from `domain::role` by `cargo xtask roles`; \
         a test fails when it is out of date.\n\nAccess tokens carry `reader`, `writer` or `admin`, and may act with \
         custom roles or an inline role besides (see Actions below); a personal token never does what its member may \
         not. Members may hold custom roles besides their base role. Every route needs a valid access token except `GET /api/v2` and \
         `GET /api/v2/openapi.json`; an environment's SDK key, mobile key or client-side ID is never one (401).\n\n{}\n{}\n{}",
        domain::role::permission_table_markdown(),
        domain::role::actor_rules_markdown(),
        domain::catalogue::catalogue_markdown(&adapter_http::catalogue::routes_needing)
    );
    std::fs::write(root.join("docs/roles.md"), text).context("writing docs/roles.md")?;
    println!("roles: wrote docs/roles.md");
    Ok(())
}
