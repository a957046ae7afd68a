//! `flagsvc`: the feature-flag management service.

use std::sync::Arc;

use adapter_http::{AppState, CorsOrigins, HttpConfig};
use anyhow::Context;
use app::cli::{self, Command, Settings};
use app::StoreUrl;
use std::time::Duration;

use adapter_webhooks::{HttpSender, SystemResolver};
use background::{DatabaseReadiness, Runner, Schedule, SdkDelivery, WebhookDeliveries};
use domain::webhook::RetryPolicy;
use service::{BootstrapOutcome, Service, SystemClock, WebhookSettings};

mod allocator;

fn main() -> anyhow::Result<()> {
    let cli = match cli::parse_from(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(cli::CliError::Usage(err)) => err.exit(),
        Err(err) => return Err(err.into()),
    };
    let args = cli.settings;
    // While the process has one thread (logging may start another).
    allocator::limit_arenas();
    cli::start_logging(&args.log, args.log_format)?;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Migrate => {
            let applied = StoreUrl::parse(&args.database_url).migrate()?;
            if applied.is_empty() {
                log::info!("the database schema is up to date");
            } else {
                log::info!("applied migrations {}", applied.join(", "));
            }
            Ok(())
        }
        Command::Serve => actix_web::rt::System::new().block_on(serve(args)),
    }
}

async fn serve(args: Settings) -> anyhow::Result<()> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let pool_size = args
        .pool_size
        .unwrap_or(u32::try_from(cores * 4).unwrap_or(8));

    // Bound first: a wrong address stops the start before anything is written (on a first
    // start, before the owner's token is made and printed).
    let listener = listen(&args.bind).with_context(|| format!("binding {}", args.bind))?;
    adapter_http::install_metrics().context("starting the metrics")?;
    let cors_origins = CorsOrigins::parse(args.cors_origins.iter().map(String::as_str))
        .context("reading --cors-origins")?;
    let rate_limit_redis =
        app::shared_rate_limits(args.rate_limit_redis_url.as_deref(), args.rate_limit).await?;
    let store = StoreUrl::parse(&args.database_url).open(pool_size, !args.no_migrate)?;
    let webhook_timeout = Duration::from_millis(args.webhook_timeout_ms);
    let service = Arc::new(configured_service(store, &args, webhook_timeout));
    if args.no_migrate {
        // Without this, a schema left behind would fail below on a missing table.
        service.check_ready().context(
            "--no-migrate: the database is not ready to serve (run `flagsvc migrate` first)",
        )?;
    }
    let outcome = service
        .authentication()
        .bootstrap(args.bootstrap_token.as_deref(), &args.owner_email)
        .context("creating the owner")?;
    report_bootstrap(outcome, args.log_format);

    // Held until the server stops: dropping the runner stops the jobs.
    let (_background, [deliveries, streams]) = start_background(&service, webhook_timeout)?;
    let readiness_checks: Vec<(String, adapter_http::ReadinessCheck)> = vec![
        (
            "webhookWorker".to_owned(),
            Arc::new(move || deliveries.check()),
        ),
        ("sdkDelivery".to_owned(), Arc::new(move || streams.check())),
    ];
    let console_service = service.clone();
    let streams_service = service.clone();
    let state = AppState::with_readiness_checks(
        service,
        http_config(&args, cors_origins, rate_limit_redis),
        readiness_checks,
    )
    .context("serialising the OpenAPI document")?;
    // The SDK routes (OFREP), beside the API or on `--sdk-bind` alone.
    let sdk = adapter_sdk::SdkRoutes::new(
        console_service.clone(),
        Arc::new(app::SdkGate(state.clone())),
    )
    .with_max_connection_time(Some(Duration::from_secs(args.sdk_max_connection_time)));
    let sdk_beside_api = args.sdk_bind.is_none().then(|| sdk.clone());
    // The web console at `/`, over the same use cases as the API; its failed sign-ins count
    // with the API's failed authentications.
    let console = adapter_web::Console::new(console_service)
        .throttled_by(Arc::new(app::SharedAuthThrottle(state.clone())));
    let not_found = console.clone();
    // The SDK routes first: the hottest requests are matched before the console's patterns.
    let mount = adapter_http::Mount::new(move |routes| {
        if let Some(sdk) = &sdk_beside_api {
            sdk.configure(routes);
        }
        console.configure(routes);
    })
    .with_not_found(move |req| not_found.not_found(req));
    let sdk_server = match &args.sdk_bind {
        Some(address) => Some(sdk_server(address, sdk, &state, (cores, pool_size))?),
        None => None,
    };
    let metrics_server = match &args.metrics_bind {
        Some(address) => {
            let server = actix_web::HttpServer::new(adapter_http::metrics_app)
                .workers(1)
                .bind(address)
                .with_context(|| format!("binding --metrics-bind {address}"))?;
            log::info!("serving /metrics on http://{address}");
            Some(server.run())
        }
        None => None,
    };
    log::info!("listening on http://{}", args.bind);
    // One blocking thread per connection, and one per worker for what waits on none. Flag
    // changes and creations queued behind a batch being written wait without a thread
    // (`service::QueuedWrite`), so more threads would not make bigger batches: they would only
    // keep more malloc arenas at their peaks (four per connection: peak RSS 184 MiB).
    let blocking_threads = usize::try_from(pool_size).unwrap_or(8) + cores;
    let api = adapter_http::server(listener, state, cores, blocking_threads, Some(mount))
        .with_context(|| format!("serving on {}", args.bind))?;
    run_until_stopped(api, metrics_server, sdk_server, &streams_service).await
}

/// Runs the servers until SIGTERM/SIGINT (actix's signal handling stops every server of the
/// system); a stop ends the SDK streams of `service` at once, so that their SDKs reconnect to
/// another replica (a stream would otherwise hold the stop for actix's whole grace period).
async fn run_until_stopped(
    api: actix_web::dev::Server,
    metrics_server: Option<actix_web::dev::Server>,
    sdk_server: Option<actix_web::dev::Server>,
    service: &Service,
) -> anyhow::Result<()> {
    let metrics = async {
        match metrics_server {
            Some(metrics) => metrics.await.context("serving /metrics"),
            None => Ok(()),
        }
    };
    let sdk = async {
        match sdk_server {
            Some(sdk) => sdk.await.context("serving --sdk-bind"),
            None => Ok(()),
        }
    };
    let servers = futures_util::future::join3(api, metrics, sdk);
    let streams_end = async {
        stop_signal().await;
        service.close_streams();
        std::future::pending::<()>().await;
    };
    let (api, metrics, sdk) =
        match futures_util::future::select(Box::pin(servers), Box::pin(streams_end)).await {
            futures_util::future::Either::Left((done, _)) => done,
            futures_util::future::Either::Right(((), _)) => unreachable!("pending never ends"),
        };
    metrics?;
    sdk?;
    api.context("serving")
}

/// The first SIGTERM or SIGINT (what stops the servers too).
async fn stop_signal() {
    use actix_web::rt::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            futures_util::future::select(Box::pin(term.recv()), Box::pin(int.recv())).await;
        }
        // Without signal handlers streams end with the servers' grace period instead.
        _ => std::future::pending::<()>().await,
    }
}

/// The use cases over `store`, with the caches, limits and webhook settings `args` set.
fn configured_service(
    store: Arc<dyn ports::Store>,
    args: &Settings,
    webhook_timeout: Duration,
) -> Service {
    Service::new(
        store,
        Arc::new(SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    )
    .with_webhook_settings(webhook_settings(args, webhook_timeout))
    .with_read_cache(args.read_cache_mib.saturating_mul(1 << 20))
    .with_snapshot_budget(args.snapshot_budget_mib.saturating_mul(1 << 20))
    .with_stream_limits(service::StreamLimits {
        max_streams: args.sdk_max_streams,
        max_streams_per_environment: args.sdk_max_streams_per_environment,
        heartbeat: Duration::from_secs(args.sdk_heartbeat_secs),
    })
}

/// A listener on `address` whose queue of connections not yet accepted holds 4,096: when a
/// replica stops, its SDKs reconnect to the others at once (the default of 128 made thousands
/// of them wait a second or more for a retransmitted SYN).
fn listen(address: &str) -> std::io::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind(address)?;
    socket2::SockRef::from(&listener).listen(4096)?;
    Ok(listener)
}

/// The SDK routes alone on `address` (`--sdk-bind`), with `cores` workers and a blocking pool
/// of `pool_size` threads.
fn sdk_server(
    address: &str,
    sdk: adapter_sdk::SdkRoutes,
    state: &actix_web::web::Data<AppState>,
    (cores, pool_size): (usize, u32),
) -> anyhow::Result<actix_web::dev::Server> {
    let listener = listen(address).with_context(|| format!("binding --sdk-bind {address}"))?;
    let routes = adapter_http::Mount::new(move |routes| sdk.configure(routes));
    log::info!("serving the SDK routes on http://{address}");
    adapter_http::mount_only_server(
        listener,
        state.clone(),
        cores,
        usize::try_from(pool_size).unwrap_or(8),
        routes,
    )
    .with_context(|| format!("serving on --sdk-bind {address}"))
}

/// Webhook delivery as the command line sets it.
fn webhook_settings(args: &Settings, webhook_timeout: Duration) -> WebhookSettings {
    WebhookSettings {
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
    }
}

/// Says on start-up what became of the account's owner (its generated token, shown once).
fn report_bootstrap(outcome: BootstrapOutcome, log_format: cli::LogFormat) {
    match outcome {
        BootstrapOutcome::CreatedOwner {
            secret,
            generated: true,
        } => {
            // Shown once, on stderr, in the logs' own format (a generated secret is
            // `api-<uuid>`: nothing to escape in JSON).
            match log_format {
                cli::LogFormat::Text => eprintln!(
                    "flagsvc: created the account owner. Its access token (shown only now): {secret}"
                ),
                cli::LogFormat::Json => eprintln!(
                    "{{\"level\":\"WARN\",\"target\":\"flagsvc\",\"message\":\"created the account owner; its access token is shown only now\",\"owner_token\":\"{secret}\"}}"
                ),
            }
        }
        BootstrapOutcome::CreatedOwner {
            generated: false, ..
        } => log::info!("created the account owner with the bootstrap token"),
        BootstrapOutcome::IgnoredToken => log::warn!(
            "--bootstrap-token (FLAGSVC_BOOTSTRAP_TOKEN) is set but the account exists: it is \
             used only when the account is created, and was ignored; unset it"
        ),
        BootstrapOutcome::Unchanged => {}
    }
}

/// The API's settings as the command line sets them.
/// Starts every background job of the process: webhook delivery (whose liveness `/readyz`
/// reports), metrics upkeep and the database's readiness check. The runner stops them when
/// dropped.
fn start_background(
    service: &Arc<Service>,
    webhook_timeout: Duration,
) -> anyhow::Result<(Runner, [background::Liveness; 2])> {
    // Deliveries run beside the API and survive restarts: the outbox is in the database.
    let mut background = Runner::new();
    let deliveries = background
        .start(
            Arc::new(WebhookDeliveries::new(
                service.clone(),
                Arc::new(HttpSender::new(webhook_timeout)),
            )),
            Schedule {
                interval: Duration::from_millis(500),
                batch: 20,
            },
        )
        .context("starting the webhook delivery thread")?;
    // Histogram samples between scrapes take bounded memory (its liveness is no readiness).
    background
        .start(
            Arc::new(app::MetricsUpkeep),
            Schedule {
                interval: adapter_http::METRICS_UPKEEP_EVERY,
                batch: 1,
            },
        )
        .context("starting the metrics upkeep thread")?;
    // Changes reach the SDK streams as this loop steps their channels (woken by each change).
    let streams = background
        .start(
            Arc::new(SdkDelivery::new(service.clone())),
            Schedule {
                interval: Duration::from_secs(1),
                batch: 64,
            },
        )
        .context("starting the SDK delivery thread")?;
    // `/readyz` reads what this loop last found (a flood of probes costs the database nothing).
    background
        .start(
            Arc::new(DatabaseReadiness::new(service.clone())),
            Schedule {
                interval: adapter_http::READY_CHECK_EVERY,
                batch: 1,
            },
        )
        .context("starting the database readiness thread")?;
    Ok((background, [deliveries, streams]))
}

fn http_config(
    args: &Settings,
    cors_origins: CorsOrigins,
    rate_limit_redis: Option<adapter_redis::RedisRateLimits>,
) -> HttpConfig {
    HttpConfig {
        rate_limit: args.rate_limit,
        sdk_rate_limit: args.sdk_rate_limit,
        shared_rate_limits: rate_limit_redis
            .map(|redis| Arc::new(redis) as Arc<dyn adapter_http::SharedRateLimits>),
        body_limit: args.body_limit,
        auth_failure_limit: args.auth_failure_limit,
        trust_forwarded_for: args.trust_forwarded_for,
        body_timeout: Duration::from_millis(args.body_timeout_ms.max(1)),
        head_timeout: Duration::from_millis(args.head_timeout_ms.max(1)),
        cors_origins,
        metrics_on_api: args.metrics_bind.is_none(),
    }
}
