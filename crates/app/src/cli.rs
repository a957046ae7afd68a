//! The command line: subcommands, settings (flags, environment variables, a configuration
//! file) and how they combine. Precedence: a flag on the command line, then its environment
//! variable, then the configuration file (`--config`), then the default.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use clap::parser::ValueSource;
use clap::{ArgAction, CommandFactory, FromArgMatches, Parser, Subcommand};

/// Feature-flag management REST API.
#[derive(Debug, Parser)]
#[command(name = "flagsvc", version, about)]
pub struct Cli {
    /// What to do (default: `serve`).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// A TOML file of settings: the keys are the long flags' names (`rate-limit = 100`,
    /// `database-url = "postgres://..."`); a flag or an environment variable overrides it.
    #[arg(long, global = true, env = "FLAGSVC_CONFIG")]
    pub config: Option<PathBuf>,
    /// The settings.
    #[command(flatten)]
    pub settings: Settings,
}

/// What the binary does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// Serve the API (the default), after applying pending migrations unless `--no-migrate`.
    Serve,
    /// Apply pending migrations to the database and exit (run it once before starting replicas
    /// with `--no-migrate`; replicas that migrate at start take turns on PostgreSQL).
    Migrate,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Every setting, as flag, environment variable and configuration-file key.
#[derive(Debug, clap::Args)]
pub struct Settings {
    /// Address to listen on.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_BIND",
        default_value = "127.0.0.1:8080"
    )]
    pub bind: String,
    /// Serve the SDK routes (the SDKs' stream `/all` and polling `/sdk/...`, OFREP
    /// `/ofrep/v1/...`) on this address only, e.g. `0.0.0.0:8081`, instead of beside the API:
    /// applications reach flag data there without reaching the management API or the console
    /// (default: beside the API, on `--bind`).
    #[arg(long, global = true, env = "FLAGSVC_SDK_BIND")]
    pub sdk_bind: Option<String>,
    /// `postgres://...` for PostgreSQL; a path or `sqlite://path` for SQLite.
    #[arg(
        long,
        global = true,
        env = "DATABASE_URL",
        default_value = "flagsvc.db"
    )]
    pub database_url: String,
    /// The owner's access token on first start (8+ characters); generated and printed when absent.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_BOOTSTRAP_TOKEN",
        hide_env_values = true
    )]
    pub bootstrap_token: Option<String>,
    /// The owner's email, used on first start.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_OWNER_EMAIL",
        default_value = "owner@flagsvc.local"
    )]
    pub owner_email: String,
    /// Log filter (tracing's `EnvFilter` syntax), e.g. `info`, `warn` or `info,adapter_sql=debug`.
    #[arg(long, global = true, env = "RUST_LOG", default_value = "info")]
    pub log: String,
    /// Requests per 10 s per token and route (five times that per token); 0 turns limiting off.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_RATE_LIMIT",
        default_value_t = 1000
    )]
    pub rate_limit: u32,
    /// Requests per 10 s per SDK key's environment and SDK route (five times that per
    /// environment); 0 turns limiting off. Counted where `--rate-limit` is.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_SDK_RATE_LIMIT",
        default_value_t = 100_000
    )]
    pub sdk_rate_limit: u32,
    /// Seconds between heartbeats on an idle SDK stream (SDKs give up on a stream silent for
    /// 5 minutes).
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_SDK_HEARTBEAT_SECS",
        default_value_t = 60,
        value_parser = clap::value_parser!(u64).range(1..=240)
    )]
    pub sdk_heartbeat_secs: u64,
    /// Seconds an SDK stream stays open at most before the server ends it (the SDK reconnects,
    /// so that load balancers rebalance); 0 keeps streams open.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_SDK_MAX_CONNECTION_TIME",
        default_value_t = 3600
    )]
    pub sdk_max_connection_time: u64,
    /// SDK streams this replica serves at once; one more is refused with 503 and
    /// `Retry-After` (the SDK backs off and retries).
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_SDK_MAX_STREAMS",
        default_value_t = 20_000
    )]
    pub sdk_max_streams: usize,
    /// SDK streams of one environment this replica serves at once (503 beyond).
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_SDK_MAX_STREAMS_PER_ENVIRONMENT",
        default_value_t = 10_000
    )]
    pub sdk_max_streams_per_environment: usize,
    /// Count the rate limits in this Redis (`redis://[[user]:password@]host[:port][/db]`),
    /// shared by every replica that uses it, instead of in each replica (where N replicas allow
    /// N times the limit). One Redis round trip per request; when Redis does not answer within
    /// 100 ms, the replica counts on its own until it does.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_RATE_LIMIT_REDIS_URL",
        hide_env_values = true
    )]
    pub rate_limit_redis_url: Option<String>,
    /// Largest request body in bytes.
    #[arg(long, global = true, env = "FLAGSVC_BODY_LIMIT", default_value_t = 1024 * 1024)]
    pub body_limit: usize,
    /// Failed authentications per minute per client address before further attempts with an
    /// unverified token get 429; 0 turns throttling off.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_AUTH_FAILURE_LIMIT",
        default_value_t = 20
    )]
    pub auth_failure_limit: u32,
    /// Take the client address from the last `X-Forwarded-For` entry (only behind a trusted
    /// proxy that sets it).
    #[arg(long, global = true, env = "FLAGSVC_TRUST_FORWARDED_FOR")]
    pub trust_forwarded_for: bool,
    /// Time a request body may take to arrive, in ms (408 past it).
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_BODY_TIMEOUT_MS",
        default_value_t = 30_000
    )]
    pub body_timeout_ms: u64,
    /// Time a request head (request line and headers) may take to arrive, in ms (408 past it).
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_HEAD_TIMEOUT_MS",
        default_value_t = 5_000
    )]
    pub head_timeout_ms: u64,
    /// Origins that may call the API from a browser (CORS), comma-separated, e.g.
    /// `https://app.example.com,http://localhost:3000`; `*` allows any origin (default: none).
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_CORS_ORIGINS",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,
    /// Database connections (default: 4 per core).
    #[arg(long, global = true, env = "FLAGSVC_POOL_SIZE")]
    pub pool_size: Option<u32>,
    /// Hosts webhooks may point at, comma-separated (default: any public host); a listed host
    /// may be or resolve to a private address.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_WEBHOOK_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub webhook_allowed_hosts: Option<Vec<String>>,
    /// Let webhooks reach private, loopback, link-local and other non-public addresses and
    /// local names (default: public addresses only).
    #[arg(long, global = true, env = "FLAGSVC_WEBHOOK_ALLOW_PRIVATE_NETWORKS")]
    pub webhook_allow_private_networks: bool,
    /// Attempts per webhook delivery, the first included.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_WEBHOOK_MAX_ATTEMPTS",
        default_value_t = 5
    )]
    pub webhook_max_attempts: u32,
    /// Delay before the first retry in ms (doubling each time, with jitter, up to 5 minutes).
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_WEBHOOK_RETRY_MS",
        default_value_t = 1000
    )]
    pub webhook_retry_ms: i64,
    /// Timeout of one delivery in ms.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_WEBHOOK_TIMEOUT_MS",
        default_value_t = 10_000
    )]
    pub webhook_timeout_ms: u64,
    /// This replica's read cache of answers (a flag, pages of flags and environments), in MiB of
    /// their JSON; 0 turns it off. PostgreSQL only, where other replicas' changes are heard
    /// (LISTEN/NOTIFY): a change is served by this replica at once, by another within 100 ms.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_READ_CACHE_MIB",
        default_value_t = 16
    )]
    pub read_cache_mib: usize,
    /// This replica's evaluation snapshots (each environment's flags and segments, projected
    /// for evaluation), in MiB of memory (estimated: five bytes per byte of their JSON); past it
    /// the least recently used environments are dropped.
    #[arg(
        long,
        global = true,
        env = "FLAGSVC_SNAPSHOT_BUDGET_MIB",
        default_value_t = 256
    )]
    pub snapshot_budget_mib: usize,
    /// How log lines are written to stderr: `text` (for people) or `json` (one object per line,
    /// for a log pipeline).
    #[arg(long, global = true, env = "FLAGSVC_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Serve `GET /metrics` (Prometheus text, no access token) on this address only, e.g.
    /// `127.0.0.1:9090`, instead of beside the API (default: beside the API).
    #[arg(long, global = true, env = "FLAGSVC_METRICS_BIND")]
    pub metrics_bind: Option<String>,
    /// Serve without applying pending migrations first (after a `flagsvc migrate` of the
    /// deploy); the server refuses to start while the schema lacks any.
    #[arg(long, global = true, env = "FLAGSVC_NO_MIGRATE")]
    pub no_migrate: bool,
}

/// Reads the command line (`argv`, the program name first) with the configuration file it
/// names, if any: see the module's documentation for the precedence.
///
/// # Errors
/// A clap error for a malformed command line (print it with `.exit()`), or an error saying
/// which file and key is wrong.
pub fn parse_from(argv: Vec<OsString>) -> Result<Cli, CliError> {
    let matches = Cli::command()
        .try_get_matches_from(&argv)
        .map_err(CliError::Usage)?;
    let Some(path) = matches.get_one::<PathBuf>("config").cloned() else {
        return Cli::from_arg_matches(&matches).map_err(CliError::Usage);
    };
    let text = read_config(&path).map_err(CliError::Config)?;
    let from_file = file_arguments(&path, &text, |id| {
        matches!(
            matches.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    })
    .map_err(CliError::Config)?;
    let mut all = Vec::with_capacity(argv.len() + from_file.len());
    let mut given = argv.into_iter();
    all.extend(given.next());
    all.extend(from_file);
    all.extend(given);
    Cli::try_parse_from(all).map_err(CliError::Usage)
}

/// The most a configuration file may hold: a few dozen settings take a few KiB, and a path
/// given by mistake (a log, a device) must not be read whole.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The configuration file at `path`, as text of at most [`MAX_CONFIG_BYTES`].
fn read_config(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    let file = path.display();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text))
        .with_context(|| format!("reading the configuration file {file}"))?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        bail!("{file} is larger than {MAX_CONFIG_BYTES} bytes: is it the configuration file?");
    }
    Ok(text)
}

/// Why the command line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Malformed flags (clap prints it best: `.exit()`).
    #[error(transparent)]
    Usage(clap::Error),
    /// The configuration file cannot be read or holds a wrong key or value.
    #[error("{0:#}")]
    Config(anyhow::Error),
}

/// The flags that the configuration file at `path` (holding `text`) stands for, leaving out
/// those `overridden` (by id) on the command line or in the environment.
fn file_arguments(
    path: &Path,
    text: &str,
    overridden: impl Fn(&str) -> bool,
) -> anyhow::Result<Vec<OsString>> {
    let file = path.display();
    let table: toml::Table = text
        .parse()
        .map_err(|e| anyhow!("{file} is not valid TOML: {e}"))?;
    let command = Cli::command();
    let settable: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|a| {
            a.get_long().is_some() && !matches!(a.get_id().as_str(), "config" | "help" | "version")
        })
        .collect();
    let mut arguments = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (key, value) in &table {
        let long = key.replace('_', "-");
        let Some(arg) = settable
            .iter()
            .find(|a| a.get_long() == Some(long.as_str()))
        else {
            let mut keys: Vec<&str> = settable.iter().filter_map(|a| a.get_long()).collect();
            keys.sort_unstable();
            bail!(
                "{file}: unknown key `{key}`; the keys are: {}",
                keys.join(", ")
            );
        };
        if seen.contains(&long) {
            bail!("{file}: `{key}` is set twice (as `{long}` and in snake_case)");
        }
        seen.push(long.clone());
        if overridden(arg.get_id().as_str()) {
            continue;
        }
        // `--flag=value`, one argument: a value may start with `-`.
        let with = |value: &str| vec![format!("--{long}={value}")];
        let lists = arg.get_value_delimiter().is_some();
        let these: Vec<String> = match (arg.get_action(), value) {
            (ArgAction::SetTrue, toml::Value::Boolean(true)) => vec![format!("--{long}")],
            (ArgAction::SetTrue, toml::Value::Boolean(false)) => vec![],
            (ArgAction::SetTrue, _) => bail!("{file}: `{key}` is true or false"),
            (_, toml::Value::String(text)) => with(text),
            (_, toml::Value::Integer(n)) => with(&n.to_string()),
            (_, toml::Value::Array(items)) if lists => {
                let items: Option<Vec<String>> = items
                    .iter()
                    .map(|item| match item {
                        toml::Value::String(text) if !text.contains(',') => Some(text.clone()),
                        toml::Value::Integer(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .collect();
                let items = items.ok_or_else(|| {
                    anyhow!("{file}: `{key}` lists strings (without commas) or numbers")
                })?;
                with(&items.join(","))
            }
            (_, toml::Value::Array(_)) => bail!("{file}: `{key}` is one value, not a list"),
            (_, other) => bail!("{file}: `{key}` cannot be {}", other.type_str()),
        };
        // Each value checked alone, so that the error names the file and the key.
        if !these.is_empty() {
            let mut alone = vec!["flagsvc".to_owned()];
            alone.extend(these.iter().cloned());
            if let Err(err) = Cli::command().try_get_matches_from(alone) {
                let reason = err.render().to_string();
                let reason = reason
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches("error: ");
                bail!("{file}: `{key}`: {reason}");
            }
        }
        arguments.extend(these.into_iter().map(OsString::from));
    }
    Ok(arguments)
}

/// Starts writing logs to stderr as `format` says, keeping what `filter` lets through (every
/// crate's `log` records included); one line per request comes from the HTTP adapter's span.
///
/// # Errors
/// A malformed filter, or logging already started.
pub fn start_logging(filter: &str, format: LogFormat) -> anyhow::Result<()> {
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .with_context(|| format!("reading the log filter `{filter}`"))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal, not in a file or a pipeline.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    match format {
        LogFormat::Text => builder.finish().try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .finish()
            .try_init(),
    }
    .map_err(|e| anyhow!("starting the logs: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_with(file: &str, args: &[&str]) -> Result<Cli, CliError> {
        let dir = std::env::temp_dir().join(format!("flagsvc-cli-{}", uuid_like()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("flagsvc.toml");
        std::fs::write(&path, file).unwrap();
        let mut argv: Vec<OsString> = vec!["flagsvc".into()];
        argv.extend(args.iter().map(OsString::from));
        argv.push("--config".into());
        argv.push(path.into_os_string());
        parse_from(argv)
    }

    fn uuid_like() -> String {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        format!(
            "{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        )
    }

    #[test]
    fn the_file_sets_what_the_command_line_does_not() {
        let cli = parse_with(
            "rate-limit = 7\nbind = \"0.0.0.0:9000\"\ntrust-forwarded-for = true\ncors-origins = [\"https://a.example\", \"https://b.example\"]\n",
            &["--bind", "127.0.0.1:1"],
        )
        .unwrap();
        assert_eq!(cli.settings.rate_limit, 7);
        assert_eq!(cli.settings.bind, "127.0.0.1:1", "the flag wins");
        assert!(cli.settings.trust_forwarded_for);
        assert_eq!(
            cli.settings.cors_origins,
            vec![
                "https://a.example".to_owned(),
                "https://b.example".to_owned()
            ]
        );
        assert_eq!(cli.command, None);
    }

    #[test]
    fn a_value_may_start_with_a_dash() {
        let cli = parse_with("bootstrap-token = \"-abcdefghijk\"\n", &[]).unwrap();
        assert_eq!(
            cli.settings.bootstrap_token.as_deref(),
            Some("-abcdefghijk")
        );
    }

    #[test]
    fn subcommands_take_the_settings_too() {
        let cli = parse_with("read_cache_mib = 0\n", &["migrate"]).unwrap();
        assert_eq!(cli.command, Some(Command::Migrate));
        assert_eq!(cli.settings.read_cache_mib, 0, "snake_case keys too");
        let argv = ["flagsvc", "serve", "--no-migrate", "--bind", "127.0.0.1:2"];
        let cli = parse_from(argv.iter().map(OsString::from).collect()).unwrap();
        assert_eq!(cli.command, Some(Command::Serve));
        assert!(cli.settings.no_migrate);
        assert_eq!(cli.settings.bind, "127.0.0.1:2");
    }

    #[test]
    fn a_wrong_key_or_value_names_the_file_and_the_key() {
        let err = parse_with("rate-limt = 5\n", &[]).unwrap_err().to_string();
        assert!(err.contains("unknown key `rate-limt`"), "{err}");
        assert!(err.contains("rate-limit"), "lists the keys: {err}");
        let err = parse_with("rate-limit = \"many\"\n", &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`rate-limit`") && err.contains("many"),
            "{err}"
        );
        let err = parse_with("trust-forwarded-for = \"yes\"\n", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("true or false"), "{err}");
        let err = parse_with("rate-limit = 5\nrate_limit = 6\n", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("set twice"), "{err}");
        let err = parse_with("bind = [\"a\", \"b\"]\n", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("one value, not a list"), "{err}");
        let err = parse_with("rate-limit = -1\n", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`rate-limit`") && err.contains("-1"), "{err}");
        let err = parse_with("rate-limit = [\n", &[]).unwrap_err().to_string();
        assert!(err.contains("not valid TOML"), "{err}");
        let err = parse_from(vec![
            "flagsvc".into(),
            "--config".into(),
            "/nonexistent/flagsvc.toml".into(),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("/nonexistent/flagsvc.toml"), "{err}");
        let big = format!(
            "# {}\n",
            "x".repeat(usize::try_from(MAX_CONFIG_BYTES).unwrap())
        );
        let err = parse_with(&big, &[]).unwrap_err().to_string();
        assert!(err.contains("larger than"), "{err}");
    }
}
