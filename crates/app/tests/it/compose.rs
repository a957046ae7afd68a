//! `docker-compose.yml`, `deploy/Caddyfile` and the `Dockerfile`, held to the binary they run.
//!
//! No Docker engine runs where the tests run, so nothing here starts a container: the files are
//! read, and every environment variable, subcommand and flag they give the flagsvc image must be
//! one that the real binary's `--help` lists (`flagsvc --help`, `flagsvc serve --help`, ...), and
//! every value one it accepts. The compose file must also keep its shape: PostgreSQL with a health
//! check, a migrate step once it is healthy, at least two replicas serving without migrating once
//! the migration succeeded, and a proxy that publishes the only port and balances every replica.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_norway::Value;

// ---------------------------------------------------------------------------------------------
// The tests

#[test]
fn compose_file_uses_only_variables_subcommands_and_flags_of_the_binary() {
    let problems = usage_problems(&compose(&read("docker-compose.yml")), help());
    assert!(
        problems.is_empty(),
        "docker-compose.yml gives the flagsvc image what its binary does not know:\n{}",
        lines(&problems)
    );
}

#[test]
fn compose_checker_refuses_a_misspelled_variable_flag_or_subcommand() {
    let text = read("docker-compose.yml");
    for (right, wrong, expected) in [
        (
            "FLAGSVC_TRUST_FORWARDED_FOR:",
            "FLAGSVC_TRUST_FORWARDED_FRO:",
            "variable `FLAGSVC_TRUST_FORWARDED_FRO`",
        ),
        ("DATABASE_URL:", "DATABASE_URI:", "variable `DATABASE_URI`"),
        ("\"--no-migrate\"", "\"--no-migrat\"", "flag `--no-migrat`"),
        ("[\"migrate\"]", "[\"migrat\"]", "subcommand `migrat`"),
    ] {
        assert!(
            text.contains(right),
            "the compose file no longer has {right}"
        );
        let problems = usage_problems(&compose(&text.replace(right, wrong)), help());
        assert!(
            problems.iter().any(|p| p.to_string().contains(expected)),
            "misspelling {right} as {wrong} should be reported as unknown {expected}; reported:\n{}",
            lines(&problems)
        );
    }
}

#[test]
fn compose_values_are_accepted_by_the_binary() {
    let file = compose(&read("docker-compose.yml"));
    let dockerfile = Dockerfile::parse(&read("Dockerfile"));
    for service in flagsvc_services(&file) {
        accepted_by_the_binary(&service, &dockerfile);
    }
}

#[test]
fn compose_starts_postgres_then_migrate_then_replicas_behind_the_proxy() {
    let file = compose(&read("docker-compose.yml"));
    let services = flagsvc_services(&file);
    let dockerfile = Dockerfile::parse(&read("Dockerfile"));

    check_postgres(&file);
    let migrate = the_migrate_step(&services, &dockerfile);
    // The replicas: `flagsvc serve` without migrating, once the migration succeeded.
    let replicas: Vec<&FlagsvcService> = services
        .iter()
        .filter(|s| matches!(s.subcommand(&dockerfile), None | Some("serve")))
        .collect();
    assert!(
        replicas.len() >= 2,
        "at least two services serve the API: {:?}",
        replicas.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for replica in &replicas {
        check_replica(replica, migrate, &dockerfile);
    }
    check_proxy(&file, &services, &replicas);
}

/// PostgreSQL, with a health check and its data in a named volume.
fn check_postgres(file: &Value) {
    let postgres = &file["services"]["postgres"];
    let image = postgres["image"].as_str().unwrap_or_default();
    assert!(
        image.starts_with("postgres:"),
        "service `postgres` runs the postgres image, not {image:?}"
    );
    assert!(
        joined(&postgres["healthcheck"]["test"]).contains("pg_isready"),
        "service `postgres` has a health check with pg_isready: {:?}",
        postgres["healthcheck"]
    );
    let volume = strings(&postgres["volumes"])
        .into_iter()
        .find(|v| v.ends_with(":/var/lib/postgresql/data"))
        .expect("service `postgres` keeps /var/lib/postgresql/data in a volume");
    let volume = volume.split(':').next().unwrap_or_default().to_owned();
    assert!(
        file["volumes"].get(&volume).is_some(),
        "the volume `{volume}` of service `postgres` is a named volume (top-level `volumes:`)"
    );
}

/// The migrate step: the one service running `flagsvc migrate`, once PostgreSQL is healthy.
fn the_migrate_step<'a>(
    services: &'a [FlagsvcService],
    dockerfile: &Dockerfile,
) -> &'a FlagsvcService {
    let migrate: Vec<&FlagsvcService> = services
        .iter()
        .filter(|s| s.subcommand(dockerfile) == Some("migrate"))
        .collect();
    let [migrate] = migrate[..] else {
        panic!(
            "exactly one service runs `flagsvc migrate`: {:?}",
            migrate.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
    };
    assert_eq!(
        depends_on(&migrate.definition, "postgres"),
        Some("service_healthy"),
        "service `{}` waits for `postgres` to be healthy (depends_on: postgres: condition: \
         service_healthy)",
        migrate.name
    );
    migrate
}

/// A replica: `flagsvc serve` without migrating once `migrate` succeeded, on `migrate`'s
/// database, reachable only through the proxy.
fn check_replica(replica: &FlagsvcService, migrate: &FlagsvcService, dockerfile: &Dockerfile) {
    let name = &replica.name;
    assert_eq!(
        depends_on(&replica.definition, &migrate.name),
        Some("service_completed_successfully"),
        "replica `{name}` waits for `{}` to succeed (condition: \
         service_completed_successfully)",
        migrate.name
    );
    let argv = replica.argv(dockerfile);
    assert!(
        argv.iter().any(|a| a == "--no-migrate")
            || replica.env_value("FLAGSVC_NO_MIGRATE").as_deref() == Some("true"),
        "replica `{name}` serves with --no-migrate (or FLAGSVC_NO_MIGRATE: \"true\"): {argv:?}"
    );
    assert_eq!(
        replica.env_value("DATABASE_URL"),
        migrate.env_value("DATABASE_URL"),
        "replica `{name}` uses the database `{}` migrates",
        migrate.name
    );
    let bind = replica.bind(dockerfile);
    assert!(
        bind.starts_with("0.0.0.0:"),
        "replica `{name}` listens on every interface of its container, not {bind:?}"
    );
    assert!(
        replica.definition.get("ports").is_none(),
        "replica `{name}` publishes no port: it trusts X-Forwarded-For, so only the proxy may \
         reach it"
    );
    assert_eq!(
        replica.env_value("FLAGSVC_TRUST_FORWARDED_FOR").as_deref(),
        Some("true"),
        "replica `{name}` takes the client address from the proxy's X-Forwarded-For"
    );
    assert!(
        replica.env_value("FLAGSVC_BOOTSTRAP_TOKEN").is_none(),
        "replica `{name}` has no default owner token: a secret written in the file would be \
         every copy's (the owner's token is generated and logged once)"
    );
    if let Some(check) = replica.definition.get("healthcheck") {
        let probe = joined(&check["test"]);
        assert!(
            probe.contains("/readyz") && probe.contains(&format!("/{}", port_of(&bind))),
            "replica `{name}` probes GET /readyz on the port it listens on ({bind}): {probe}"
        );
    }
}

/// The proxy: the only published port, 8080 on the host, in front of every replica.
fn check_proxy(file: &Value, services: &[FlagsvcService], replicas: &[&FlagsvcService]) {
    let published: Vec<(String, &Value)> = mapping(&file["services"])
        .into_iter()
        .filter(|(_, s)| s.get("ports").is_some())
        .collect();
    let [(proxy_name, proxy)] = &published[..] else {
        panic!(
            "exactly one service (the proxy) publishes a port: {:?}",
            published.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
    };
    assert!(
        !services.iter().any(|s| &s.name == proxy_name),
        "the proxy `{proxy_name}` is not the flagsvc image"
    );
    assert!(
        strings(&proxy["ports"])
            .iter()
            .any(|p| p.starts_with("8080:")),
        "the proxy `{proxy_name}` listens on port 8080 of the host: {:?}",
        proxy["ports"]
    );
    for replica in replicas {
        assert!(
            depends_on(proxy, &replica.name).is_some(),
            "the proxy `{proxy_name}` starts after replica `{}`",
            replica.name
        );
    }
}

#[test]
fn compose_proxy_config_balances_every_replica_on_readyz() {
    let file = compose(&read("docker-compose.yml"));
    let dockerfile = Dockerfile::parse(&read("Dockerfile"));
    let (proxy_name, proxy) = mapping(&file["services"])
        .into_iter()
        .find(|(_, s)| s.get("ports").is_some())
        .expect("a service (the proxy) publishes a port");
    let configs: Vec<String> = strings(&proxy["volumes"])
        .into_iter()
        .filter(|v| v.starts_with("./"))
        .map(|v| v.split(':').next().unwrap_or_default().to_owned())
        .collect();
    let [config] = &configs[..] else {
        panic!("the proxy `{proxy_name}` mounts its configuration file from the repository: {configs:?}");
    };
    let path = root().join(config);
    assert!(
        path.is_file(),
        "the proxy's configuration file {config} exists"
    );
    let text = read(config);
    for replica in flagsvc_services(&file)
        .iter()
        .filter(|s| s.subcommand(&dockerfile) != Some("migrate"))
    {
        let upstream = format!("{}:{}", replica.name, port_of(&replica.bind(&dockerfile)));
        assert!(
            text.contains(&upstream),
            "{config} sends requests to replica {upstream}"
        );
    }
    assert!(
        text.contains("/readyz"),
        "{config} checks the replicas' GET /readyz"
    );
    let listen = strings(&proxy["ports"])
        .first()
        .and_then(|p| p.rsplit(':').next().map(str::to_owned))
        .unwrap_or_default();
    assert!(
        text.contains(&format!(":{listen}")),
        "{config} listens on the container port the proxy publishes ({listen})"
    );
}

#[test]
fn compose_dependencies_name_services_that_exist() {
    let file = compose(&read("docker-compose.yml"));
    let services = mapping(&file["services"]);
    for (name, service) in &services {
        for (dependency, _) in mapping(&service["depends_on"]) {
            assert!(
                services.iter().any(|(n, _)| n == &dependency),
                "`{name}` depends on `{dependency}`, which is no service"
            );
        }
    }
}

#[test]
fn compose_dockerfile_is_multi_stage_non_root_and_runs_flagsvc() {
    let dockerfile = Dockerfile::parse(&read("Dockerfile"));
    assert!(
        dockerfile.stages.len() >= 2,
        "the Dockerfile builds in one stage and runs in another: {} FROM",
        dockerfile.stages.len()
    );
    let runtime = dockerfile.runtime();
    let user = runtime.last("USER").expect("the runtime stage sets a USER");
    let account = user.split(':').next().unwrap_or_default();
    assert!(
        !account.is_empty() && account != "root" && account != "0",
        "the runtime stage runs as a user that is not root, not USER {user}"
    );
    assert_eq!(
        dockerfile.entrypoint(),
        vec!["flagsvc".to_owned()],
        "ENTRYPOINT [\"flagsvc\"] (exec form: signals reach the binary)"
    );
    assert!(
        runtime
            .all("COPY")
            .iter()
            .any(|c| c.starts_with("--from=") && c.ends_with("/usr/local/bin/flagsvc")),
        "the runtime stage copies the built binary to /usr/local/bin/flagsvc"
    );
    let bind = runtime
        .env()
        .get("FLAGSVC_BIND")
        .cloned()
        .unwrap_or_default();
    assert!(
        bind.starts_with("0.0.0.0:"),
        "the image listens on every interface (ENV FLAGSVC_BIND=0.0.0.0:...), not {bind:?}"
    );
    let exposed: Vec<String> = runtime
        .all("EXPOSE")
        .iter()
        .flat_map(|e| {
            e.split_whitespace()
                .map(|p| p.trim_end_matches("/tcp").to_owned())
        })
        .collect();
    assert!(
        exposed.contains(&port_of(&bind).to_owned()),
        "the image EXPOSEs the port it listens on ({bind}): {exposed:?}"
    );

    // What it gives the binary exists.
    let help = help();
    for name in runtime.env().keys() {
        assert!(
            help.env.contains(name),
            "the Dockerfile sets {name}, which is not an [env: ...] of `flagsvc --help`"
        );
    }
    let mut argv = dockerfile.entrypoint();
    argv.extend(dockerfile.cmd());
    let mut problems = Vec::new();
    check_argv("Dockerfile", &argv, help, &mut problems);
    assert!(problems.is_empty(), "{}", lines(&problems));
}

#[test]
fn compose_readme_says_where_the_owner_token_is() {
    let file = compose(&read("docker-compose.yml"));
    let readme = read("README.md");
    assert!(
        readme.contains("docker compose up"),
        "README.md says how to start the compose file"
    );
    let services = flagsvc_services(&file);
    assert!(services
        .iter()
        .all(|s| s.env_value("FLAGSVC_BOOTSTRAP_TOKEN").is_none()));
    assert!(
        readme.contains("`owner_token`") && !readme.contains("change-me-owner-token"),
        "README.md says the owner's generated token is in the replicas' log (`owner_token`), \
         and gives no default token"
    );
}

// ---------------------------------------------------------------------------------------------
// What the binary accepts, from its --help

/// The names `flagsvc --help` and each subcommand's `--help` list.
#[derive(Debug, Default)]
struct Help {
    /// Every `[env: NAME` marker.
    env: BTreeSet<String>,
    /// The subcommands (`Commands:`).
    subcommands: BTreeSet<String>,
    /// Per subcommand ("" for none), each long flag and whether it takes a value.
    flags: BTreeMap<String, BTreeMap<String, bool>>,
}

/// The binary's help, read once.
fn help() -> &'static Help {
    static HELP: OnceLock<Help> = OnceLock::new();
    HELP.get_or_init(|| {
        let mut help = Help::default();
        let top = help_text(&[]);
        help.subcommands = subcommands_of(&top);
        assert!(
            help.subcommands.contains("serve") && help.subcommands.contains("migrate"),
            "`flagsvc --help` lists the subcommands serve and migrate:\n{top}"
        );
        let mut texts = vec![(String::new(), top)];
        for sub in help.subcommands.iter().filter(|s| *s != "help") {
            texts.push((sub.clone(), help_text(&[sub])));
        }
        for (sub, text) in texts {
            help.env.extend(env_names_of(&text));
            help.flags.insert(sub, flags_of(&text));
        }
        assert!(
            help.env.contains("DATABASE_URL") && help.flags[""].contains_key("--bind"),
            "the help was read (DATABASE_URL, --bind): {help:?}"
        );
        help
    })
}

fn help_text(subcommand: &[&str]) -> String {
    let output = flagsvc()
        .args(subcommand)
        .arg("--help")
        .output()
        .expect("running flagsvc --help");
    assert!(
        output.status.success(),
        "flagsvc {subcommand:?} --help failed: {}",
        describe(&output)
    );
    String::from_utf8(output.stdout).expect("the help is UTF-8")
}

/// The binary under test, with an empty environment.
fn flagsvc() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_flagsvc"));
    command.env_clear();
    command
}

/// The `[env: NAME=...]` (or `[env: NAME]`, for hidden values) markers of a help text.
fn env_names_of(text: &str) -> BTreeSet<String> {
    text.split("[env: ")
        .skip(1)
        .filter_map(|rest| {
            let end = rest.find(['=', ']'])?;
            Some(rest[..end].to_owned())
        })
        .collect()
}

/// The names in the `Commands:` section of a help text.
fn subcommands_of(text: &str) -> BTreeSet<String> {
    text.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// The long flags of the option lines of a help text (`  -h, --help`, `      --bind <BIND>`;
/// descriptions are indented further), each with whether it takes a value.
fn flags_of(text: &str) -> BTreeMap<String, bool> {
    text.lines()
        .filter(|l| {
            let indent = l.len() - l.trim_start().len();
            indent <= 6 && l.trim_start().starts_with('-')
        })
        .flat_map(|l| {
            let takes_value = l.contains('<');
            l.split([' ', ','])
                .filter(|t| t.starts_with("--"))
                .map(move |t| (t.to_owned(), takes_value))
                .collect::<Vec<_>>()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The compose file

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    let path = root().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The compose file parsed, with its merge keys (`<<: *anchor`) applied, nested ones too.
fn compose(text: &str) -> Value {
    let mut value: Value = serde_norway::from_str(text)
        .unwrap_or_else(|e| panic!("docker-compose.yml is not valid YAML: {e}"));
    for _ in 0..8 {
        if !has_merge_key(&value) {
            return value;
        }
        value.apply_merge().expect("applying the merge keys");
    }
    panic!("docker-compose.yml nests merge keys more than 8 deep");
}

fn has_merge_key(value: &Value) -> bool {
    match value {
        Value::Mapping(m) => m.contains_key("<<") || m.values().any(has_merge_key),
        Value::Sequence(s) => s.iter().any(has_merge_key),
        Value::Tagged(t) => has_merge_key(&t.value),
        _ => false,
    }
}

/// A service that runs this repository's image (it has `build:`).
#[derive(Debug)]
struct FlagsvcService {
    name: String,
    definition: Value,
}

impl FlagsvcService {
    /// Its environment: names and values as given (`environment:` as a mapping or a list).
    fn environment(&self) -> Vec<(String, Option<&Value>)> {
        match &self.definition["environment"] {
            Value::Mapping(m) => m
                .iter()
                .map(|(k, v)| (k.as_str().unwrap_or_default().to_owned(), Some(v)))
                .collect(),
            Value::Sequence(items) => items
                .iter()
                .map(|item| {
                    let item = item.as_str().unwrap_or_default();
                    (item.split('=').next().unwrap_or_default().to_owned(), None)
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The value of one variable, interpolated as for local use (`${NAME:-default}` gives the
    /// default).
    fn env_value(&self, name: &str) -> Option<String> {
        match &self.definition["environment"] {
            Value::Mapping(m) => m.get(name).map(|v| interpolate(&scalar(v))),
            Value::Sequence(items) => items.iter().find_map(|item| {
                let (n, v) = item.as_str()?.split_once('=')?;
                (n == name).then(|| interpolate(v))
            }),
            _ => None,
        }
    }

    /// The command line its container runs: its `entrypoint` or the image's, then its `command`
    /// or (without an `entrypoint` of its own) the image's `CMD`.
    fn argv(&self, dockerfile: &Dockerfile) -> Vec<String> {
        let words = |v: &Value| match v {
            Value::String(s) => s.split_whitespace().map(interpolate).collect(),
            other => strings(other)
                .iter()
                .map(|s| interpolate(s))
                .collect::<Vec<_>>(),
        };
        let entrypoint = self.definition.get("entrypoint");
        let command = self.definition.get("command");
        let mut argv = entrypoint.map_or_else(|| dockerfile.entrypoint(), words);
        match (entrypoint, command) {
            (_, Some(command)) => argv.extend(words(command)),
            (None, None) => argv.extend(dockerfile.cmd()),
            (Some(_), None) => {}
        }
        argv
    }

    /// Its subcommand (`None`: none given, which serves).
    fn subcommand(&self, dockerfile: &Dockerfile) -> Option<&'static str> {
        let argv = self.argv(dockerfile);
        let sub = argv.get(1).filter(|a| !a.starts_with('-'))?;
        ["serve", "migrate"]
            .into_iter()
            .find(|known| known == sub)
            .or(Some("unknown"))
    }

    /// The address it listens on: its `--bind`, else its FLAGSVC_BIND, else the image's.
    fn bind(&self, dockerfile: &Dockerfile) -> String {
        let argv = self.argv(dockerfile);
        let flag = argv.iter().enumerate().find_map(|(i, a)| {
            a.strip_prefix("--bind=")
                .map(str::to_owned)
                .or_else(|| (a == "--bind").then(|| argv.get(i + 1).cloned()).flatten())
        });
        flag.or_else(|| self.env_value("FLAGSVC_BIND"))
            .or_else(|| dockerfile.runtime().env().get("FLAGSVC_BIND").cloned())
            .unwrap_or_default()
    }
}

fn flagsvc_services(file: &Value) -> Vec<FlagsvcService> {
    let services: Vec<FlagsvcService> = mapping(&file["services"])
        .into_iter()
        .filter(|(_, s)| s.get("build").is_some())
        .map(|(name, s)| FlagsvcService {
            name,
            definition: s.clone(),
        })
        .collect();
    assert!(
        !services.is_empty(),
        "some services of docker-compose.yml are built from this repository (build:)"
    );
    services
}

/// Compose's interpolation for local use: `$$` is `$`, `${NAME:-default}` and `${NAME-default}`
/// give the default. A variable without a default has no local value: refused.
fn interpolate(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(inner) = rest.strip_prefix('{') {
            let end = inner
                .find('}')
                .unwrap_or_else(|| panic!("unclosed ${{ in {text:?}"));
            let expression = &inner[..end];
            let default = expression
                .split_once(":-")
                .or_else(|| expression.split_once('-'))
                .map(|(_, d)| d)
                .unwrap_or_else(|| {
                    panic!("${{{expression}}} in {text:?} needs a default for local use (:-)")
                });
            out.push_str(default);
            rest = &inner[end + 1..];
        } else {
            panic!("write ${{NAME:-default}}, not $NAME, in {text:?}");
        }
    }
    out.push_str(rest);
    out
}

/// Why the compose file does not fit the binary.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    service: String,
    kind: Kind,
    name: String,
    detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Variable,
    Subcommand,
    Flag,
    Argument,
    Value,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Variable => "variable",
            Kind::Subcommand => "subcommand",
            Kind::Flag => "flag",
            Kind::Argument => "argument",
            Kind::Value => "value of",
        };
        write!(
            f,
            "{}: {kind} `{}` {}",
            self.service, self.name, self.detail
        )
    }
}

fn lines(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  {p}\n"))
        .collect::<String>()
}

/// Every variable, subcommand and flag the compose file gives the flagsvc image that its
/// binary does not have (every variable must be one of the binary's: the image runs nothing
/// else), and every value that is not a string or number.
fn usage_problems(file: &Value, help: &Help) -> Vec<Problem> {
    let dockerfile = Dockerfile::parse(&read("Dockerfile"));
    let mut problems = Vec::new();
    for service in flagsvc_services(file) {
        for (name, value) in service.environment() {
            if !help.env.contains(&name) {
                problems.push(Problem {
                    service: service.name.clone(),
                    kind: Kind::Variable,
                    name: name.clone(),
                    detail: "is not an [env: ...] of `flagsvc --help`".to_owned(),
                });
            }
            if let Some(
                value @ (Value::Bool(_) | Value::Null | Value::Sequence(_) | Value::Mapping(_)),
            ) = value
            {
                problems.push(Problem {
                    service: service.name.clone(),
                    kind: Kind::Value,
                    name,
                    detail: format!("is {value:?}: compose takes a string or a number (quote it)"),
                });
            }
        }
        check_argv(
            &service.name,
            &service.argv(&dockerfile),
            help,
            &mut problems,
        );
    }
    problems
}

/// Checks a container's command line: the binary, then an optional subcommand, then flags
/// (`--flag value`, `--flag=value`), each known to that subcommand's help.
fn check_argv(service: &str, argv: &[String], help: &Help, problems: &mut Vec<Problem>) {
    let mut problem = |kind, name: &str, detail: &str| {
        problems.push(Problem {
            service: service.to_owned(),
            kind,
            name: name.to_owned(),
            detail: detail.to_owned(),
        });
    };
    let Some((binary, rest)) = argv.split_first() else {
        problem(
            Kind::Argument,
            "",
            "no command line (ENTRYPOINT or entrypoint:)",
        );
        return;
    };
    if binary != "flagsvc" && binary != "/usr/local/bin/flagsvc" {
        problem(Kind::Argument, binary, "is not the flagsvc binary");
        return;
    }
    let mut rest = rest.iter().peekable();
    let mut subcommand = String::new();
    if let Some(first) = rest.next_if(|a| !a.starts_with('-')) {
        if help.subcommands.contains(first) && first != "help" {
            subcommand = first.clone();
        } else {
            problem(
                Kind::Subcommand,
                first,
                "is not a subcommand of `flagsvc --help`",
            );
            return;
        }
    }
    let flags = &help.flags[&subcommand];
    let shown = if subcommand.is_empty() {
        "`flagsvc --help`".to_owned()
    } else {
        format!("`flagsvc {subcommand} --help`")
    };
    while let Some(arg) = rest.next() {
        let (flag, inline_value) = match arg.split_once('=') {
            Some((flag, _)) => (flag, true),
            None => (arg.as_str(), false),
        };
        if !flag.starts_with("--") {
            problem(
                Kind::Argument,
                arg,
                "is not a flag, and flagsvc takes no other argument",
            );
            continue;
        }
        match flags.get(flag) {
            None => problem(Kind::Flag, flag, &format!("is not in {shown}")),
            Some(true) if !inline_value => {
                if rest.next().is_none() {
                    problem(Kind::Flag, flag, "takes a value, and none follows");
                }
            }
            Some(false) if inline_value => problem(Kind::Flag, flag, "takes no value"),
            Some(_) => {}
        }
    }
}

/// Runs the service's command line with its environment, as `migrate` on a scratch SQLite
/// database (`serve` would stay up; the settings are global, so `migrate` reads them all), and
/// requires the binary to accept it.
fn accepted_by_the_binary(service: &FlagsvcService, dockerfile: &Dockerfile) {
    let dir = std::env::temp_dir().join(format!("flagsvc-compose-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut command = flagsvc();
    command.current_dir(&dir);
    for (name, _) in service.environment() {
        if let Some(value) = service.env_value(&name) {
            command.env(&name, value);
        }
    }
    command.env("DATABASE_URL", dir.join("scratch.db"));
    let argv = service.argv(dockerfile);
    let flags = argv
        .iter()
        .skip(1)
        .skip_while(|a| !a.starts_with('-'))
        .collect::<Vec<_>>();
    command.arg("migrate").args(&flags);
    let output = command.output().expect("running flagsvc migrate");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        output.status.success(),
        "service `{}`: flagsvc refuses its environment or flags ({flags:?}): {}",
        service.name,
        describe(&output)
    );
}

fn describe(output: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

// ---------------------------------------------------------------------------------------------
// Small readers of YAML values

fn mapping(value: &Value) -> Vec<(String, &Value)> {
    value
        .as_mapping()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v)))
                .collect()
        })
        .unwrap_or_default()
}

/// The strings of a sequence (a string alone counts as one).
fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Sequence(items) => items.iter().map(scalar).collect(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

fn joined(value: &Value) -> String {
    strings(value).join(" ")
}

/// The condition of `service`'s dependency on `on` ("service_started" for the list form).
fn depends_on<'a>(service: &'a Value, on: &str) -> Option<&'a str> {
    match &service["depends_on"] {
        Value::Sequence(items) => items
            .iter()
            .any(|i| i.as_str() == Some(on))
            .then_some("service_started"),
        Value::Mapping(m) => m
            .get(on)
            .map(|d| d["condition"].as_str().unwrap_or("service_started")),
        _ => None,
    }
}

fn port_of(address: &str) -> &str {
    address.rsplit(':').next().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The Dockerfile, as text

#[derive(Debug)]
struct Dockerfile {
    stages: Vec<Stage>,
}

/// One `FROM` and the instructions after it: (INSTRUCTION, arguments).
#[derive(Debug)]
struct Stage {
    instructions: Vec<(String, String)>,
}

impl Dockerfile {
    /// Splits the text into instructions (continuation lines joined, comments dropped) and the
    /// instructions into stages.
    fn parse(text: &str) -> Self {
        let mut logical = Vec::new();
        let mut current = String::new();
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
                continue;
            }
            match trimmed.strip_suffix('\\') {
                Some(part) => {
                    current.push_str(part);
                    current.push(' ');
                }
                None => {
                    current.push_str(trimmed);
                    logical.push(std::mem::take(&mut current));
                }
            }
        }
        let mut stages: Vec<Stage> = Vec::new();
        for instruction in logical {
            let (name, arguments) = instruction
                .split_once(char::is_whitespace)
                .unwrap_or((&instruction, ""));
            let name = name.to_ascii_uppercase();
            let arguments = arguments.trim().to_owned();
            if name == "FROM" {
                stages.push(Stage {
                    instructions: Vec::new(),
                });
            }
            stages
                .last_mut()
                .unwrap_or_else(|| panic!("the Dockerfile begins with FROM, not {name}"))
                .instructions
                .push((name, arguments));
        }
        Dockerfile { stages }
    }

    /// The last stage: the image that runs.
    fn runtime(&self) -> &Stage {
        self.stages.last().expect("the Dockerfile has a FROM")
    }

    fn entrypoint(&self) -> Vec<String> {
        exec_form(
            "ENTRYPOINT",
            self.runtime().last("ENTRYPOINT").unwrap_or("[]"),
        )
    }

    fn cmd(&self) -> Vec<String> {
        exec_form("CMD", self.runtime().last("CMD").unwrap_or("[]"))
    }
}

impl Stage {
    fn all(&self, instruction: &str) -> Vec<&str> {
        self.instructions
            .iter()
            .filter(|(name, _)| name == instruction)
            .map(|(_, arguments)| arguments.as_str())
            .collect()
    }

    fn last(&self, instruction: &str) -> Option<&str> {
        self.all(instruction).pop()
    }

    /// Its `ENV` (`ENV NAME=value ...`, or `ENV NAME value`).
    fn env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        for arguments in self.all("ENV") {
            let first = arguments.split_whitespace().next().unwrap_or_default();
            if first.contains('=') {
                for pair in arguments.split_whitespace() {
                    let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                    env.insert(name.to_owned(), value.trim_matches('"').to_owned());
                }
            } else {
                let value = arguments[first.len()..].trim();
                env.insert(first.to_owned(), value.to_owned());
            }
        }
        env
    }
}

/// An instruction's exec form (`["a", "b"]`); the shell form would run the binary under
/// `/bin/sh -c`, where it does not receive the container's stop signal.
fn exec_form(instruction: &str, arguments: &str) -> Vec<String> {
    serde_json::from_str(arguments).unwrap_or_else(|e| {
        panic!("{instruction} {arguments}: write the exec form, [\"flagsvc\", ...] ({e})")
    })
}
