//! `flagsvc`: the feature-flag management service.

use std::sync::Arc;

use adapter_http::{AppState, CorsOrigins, HttpConfig};
use anyhow::Context;
use app::StoreUrl;
use clap::Parser;
use std::time::Duration;

use adapter_webhooks::{HttpSender, SystemResolver, Worker};
use domain::webhook::RetryPolicy;
use service::{BootstrapOutcome, Service, SystemClock, WebhookSettings};

/// Feature-flag management REST API.
#[derive(Debug, Parser)]
#[command(name = "flagsvc", version, about)]
struct Args {
    /// Address to listen on.
    #[arg(long, env = "FLAGSVC_BIND", default_value = "127.0.0.1:8080")]
    bind: String,
    /// `postgres://...` for PostgreSQL; a path or `sqlite://path` for SQLite.
    #[arg(long, env = "DATABASE_URL", default_value = "flagsvc.db")]
    database_url: String,
    /// The owner's access token on first start (8+ characters); generated and printed when absent.
    #[arg(long, env = "FLAGSVC_BOOTSTRAP_TOKEN", hide_env_values = true)]
    bootstrap_token: Option<String>,
    /// The owner's email, used on first start.
    #[arg(
        long,
        env = "FLAGSVC_OWNER_EMAIL",
        default_value = "owner@flagsvc.local"
    )]
    owner_email: String,
    /// Log filter (env_logger syntax), e.g. `info` or `flagsvc=debug`.
    #[arg(long, env = "RUST_LOG", default_value = "info")]
    log: String,
    /// Requests per 10 s per token and route (five times that per token); 0 turns limiting off.
    #[arg(long, env = "FLAGSVC_RATE_LIMIT", default_value_t = 1000)]
    rate_limit: u32,
    /// Largest request body in bytes.
    #[arg(long, env = "FLAGSVC_BODY_LIMIT", default_value_t = 1024 * 1024)]
    body_limit: usize,
    /// Failed authentications per minute per client address before further attempts with an
    /// unverified token get 429; 0 turns throttling off.
    #[arg(long, env = "FLAGSVC_AUTH_FAILURE_LIMIT", default_value_t = 20)]
    auth_failure_limit: u32,
    /// Take the client address from the last `X-Forwarded-For` entry (only behind a trusted
    /// proxy that sets it).
    #[arg(long, env = "FLAGSVC_TRUST_FORWARDED_FOR")]
    trust_forwarded_for: bool,
    /// Time a request body may take to arrive, in ms (408 past it).
    #[arg(long, env = "FLAGSVC_BODY_TIMEOUT_MS", default_value_t = 30_000)]
    body_timeout_ms: u64,
    /// Time a request head (request line and headers) may take to arrive, in ms (408 past it).
    #[arg(long, env = "FLAGSVC_HEAD_TIMEOUT_MS", default_value_t = 5_000)]
    head_timeout_ms: u64,
    /// Origins that may call the API from a browser (CORS), comma-separated, e.g.
    /// `https://app.example.com,http://localhost:3000`; `*` allows any origin (default: none).
    #[arg(long, env = "FLAGSVC_CORS_ORIGINS", value_delimiter = ',')]
    cors_origins: Vec<String>,
    /// Database connections (default: 4 per core).
    #[arg(long, env = "FLAGSVC_POOL_SIZE")]
    pool_size: Option<u32>,
    /// Hosts webhooks may point at, comma-separated (default: any public host); a listed host
    /// may be or resolve to a private address.
    #[arg(long, env = "FLAGSVC_WEBHOOK_ALLOWED_HOSTS", value_delimiter = ',')]
    webhook_allowed_hosts: Option<Vec<String>>,
    /// Let webhooks reach private, loopback, link-local and other non-public addresses and
    /// local names (default: public addresses only).
    #[arg(long, env = "FLAGSVC_WEBHOOK_ALLOW_PRIVATE_NETWORKS")]
    webhook_allow_private_networks: bool,
    /// Attempts per webhook delivery, the first included.
    #[arg(long, env = "FLAGSVC_WEBHOOK_MAX_ATTEMPTS", default_value_t = 5)]
    webhook_max_attempts: u32,
    /// Delay before the first retry in ms (doubling each time, with jitter, up to 5 minutes).
    #[arg(long, env = "FLAGSVC_WEBHOOK_RETRY_MS", default_value_t = 1000)]
    webhook_retry_ms: i64,
    /// Timeout of one delivery in ms.
    #[arg(long, env = "FLAGSVC_WEBHOOK_TIMEOUT_MS", default_value_t = 10_000)]
    webhook_timeout_ms: u64,
    /// This replica's read cache of answers (a flag, pages of flags and environments), in MiB of
    /// their JSON; 0 turns it off. PostgreSQL only, where other replicas' changes are heard
    /// (LISTEN/NOTIFY): a change is served by this replica at once, by another within 100 ms.
    #[arg(long, env = "FLAGSVC_READ_CACHE_MIB", default_value_t = 16)]
    read_cache_mib: usize,
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    env_logger::Builder::new().parse_filters(&args.log).init();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let pool_size = args
        .pool_size
        .unwrap_or(u32::try_from(cores * 4).unwrap_or(8));

    let cors_origins = CorsOrigins::parse(args.cors_origins.iter().map(String::as_str))
        .context("reading --cors-origins")?;
    let store = StoreUrl::parse(&args.database_url).open(pool_size)?;
    let webhook_timeout = Duration::from_millis(args.webhook_timeout_ms);
    let webhooks = WebhookSettings {
        allowed_hosts: args.webhook_allowed_hosts.clone(),
        allow_private_networks: args.webhook_allow_private_networks,
        // A webhook's host is looked up when it is set, within the delivery timeout (at most 5 s).
        resolver: Some(Arc::new(SystemResolver::new(
            webhook_timeout.min(Duration::from_secs(5)),
        ))),
        retry: RetryPolicy {
            max_attempts: args.webhook_max_attempts.max(1),
            base_delay_ms: args.webhook_retry_ms.max(1),
            max_delay_ms: 300_000,
        },
    };
    let service = Arc::new(
        Service::new(
            store,
            Arc::new(SystemClock::default()),
            Arc::new(adapter_http::ApiRepresentations),
        )
        .with_webhook_settings(webhooks)
        .with_read_cache(args.read_cache_mib.saturating_mul(1 << 20)),
    );
    match service
        .bootstrap(args.bootstrap_token.as_deref(), &args.owner_email)
        .context("creating the owner")?
    {
        BootstrapOutcome::CreatedOwner {
            secret,
            generated: true,
        } => {
            eprintln!(
                "flagsvc: created the account owner. Its access token (shown only now): {secret}"
            );
        }
        BootstrapOutcome::CreatedOwner {
            generated: false, ..
        } => log::info!("created the account owner with the bootstrap token"),
        BootstrapOutcome::AddedToken => {
            log::info!("added the bootstrap token to the account owner")
        }
        BootstrapOutcome::Unchanged => {}
    }

    // Deliveries run beside the API and survive restarts: the outbox is in the database.
    let sender = Arc::new(HttpSender::new(webhook_timeout));
    let deliveries = Worker::start(service.clone(), sender, Duration::from_millis(500))
        .context("starting the webhook delivery thread")?;

    let deliveries_running = deliveries.running();
    let readiness_checks: Vec<(String, adapter_http::ReadinessCheck)> = vec![(
        "webhookWorker".to_owned(),
        Arc::new(move || deliveries_running.check()),
    )];
    let state = AppState::with_readiness_checks(
        service,
        HttpConfig {
            rate_limit: args.rate_limit,
            body_limit: args.body_limit,
            auth_failure_limit: args.auth_failure_limit,
            trust_forwarded_for: args.trust_forwarded_for,
            body_timeout: Duration::from_millis(args.body_timeout_ms.max(1)),
            head_timeout: Duration::from_millis(args.head_timeout_ms.max(1)),
            cors_origins,
        },
        readiness_checks,
    )
    .context("serialising the OpenAPI document")?;
    let listener = std::net::TcpListener::bind(&args.bind)
        .with_context(|| format!("binding {}", args.bind))?;
    log::info!("listening on http://{}", args.bind);
    // One blocking thread per connection, and one per worker for what waits on none.
    let blocking_threads = usize::try_from(pool_size).unwrap_or(8) + cores;
    adapter_http::server(listener, state, cores, blocking_threads)
        .with_context(|| format!("serving on {}", args.bind))?
        .await
        .context("serving")
}
