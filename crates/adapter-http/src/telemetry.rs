//! `GET /metrics`: the process's metrics in the Prometheus text format.
//!
//! Every crate counts through the `metrics` facade (requests here; database pool and
//! transaction retries in the stores; webhook deliveries in the service); [`install`] sets the
//! Prometheus recorder that keeps them, once per process, and [`metrics`] renders it. The
//! endpoint needs no access token: serve it on a separate address (`--metrics-bind`, see
//! [`metrics_app`]) to keep it off a public listener.

use std::sync::OnceLock;
use std::time::Duration;

use actix_web::{web, HttpResponse};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Upper bounds of the latency histograms, in seconds: from a cached read (well under a
/// millisecond) to a request at its limits.
const SECONDS_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// How often [`run_upkeep`] is meant to run: histograms folded, so that samples between
/// scrapes take bounded memory.
pub const UPKEEP_EVERY: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
/// Held while the recorder is installed: two first calls at once would both find no handle,
/// and the second would fail to install a second recorder.
static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Why the recorder could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The recorder could not be built or another one is installed.
    #[error("cannot install the metrics recorder: {0}")]
    Install(String),
}

/// Installs the process's metrics recorder (once; later calls return the same handle) and
/// records the build info.
///
/// # Errors
/// [`MetricsError`] when another recorder was installed first.
pub fn install() -> Result<PrometheusHandle, MetricsError> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let _installing = INSTALLING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &SECONDS_BUCKETS)
        .map_err(|e| MetricsError::Install(e.to_string()))?
        .install_recorder()
        .map_err(|e| MetricsError::Install(e.to_string()))?;
    let handle = HANDLE.get_or_init(|| handle).clone();
    metrics::gauge!("flagsvc_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    describe();
    Ok(handle)
}

/// Folds the histograms' samples gathered since the last fold or scrape (the binary runs it
/// as a background job every [`UPKEEP_EVERY`]; without it, samples wait in memory for the
/// next scrape). Nothing without a recorder.
pub fn run_upkeep() {
    if let Some(handle) = HANDLE.get() {
        handle.run_upkeep();
    }
}

/// What each metric is (the `# HELP` lines), and the counters at 0 before anything happens,
/// so that a dashboard sees a series from the start.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_gauge!(
        "flagsvc_build_info",
        "The release (label `version`); always 1."
    );
    describe_counter!(
        "flagsvc_http_requests_total",
        "Answered requests by route pattern, method and status."
    );
    describe_histogram!(
        "flagsvc_http_request_duration_seconds",
        Unit::Seconds,
        "Time from a request's head to its answer, by route pattern, method and status."
    );
    describe_gauge!(
        "flagsvc_http_requests_in_flight",
        "Requests being handled now."
    );
    describe_gauge!(
        "flagsvc_db_pool_connections",
        "Open database connections of the pool."
    );
    describe_gauge!(
        "flagsvc_db_pool_idle_connections",
        "Open database connections waiting for work."
    );
    describe_gauge!(
        "flagsvc_db_pool_max_connections",
        "The pool's size limit (--pool-size)."
    );
    describe_histogram!(
        "flagsvc_db_pool_wait_seconds",
        Unit::Seconds,
        "Time a unit of work waited for a database connection."
    );
    describe_counter!(
        "flagsvc_db_conflicts_total",
        "Write transactions the database aborted for a concurrent one (deadlock, serialization)."
    );
    describe_counter!(
        "flagsvc_db_transaction_retries_total",
        "Write transactions run again after a conflict."
    );
    describe_counter!(
        "flagsvc_auth_failures_total",
        "Requests refused for a missing or invalid access token."
    );
    describe_counter!(
        "flagsvc_rate_limit_rejections_total",
        "Requests refused with 429, by limit: `requests` (per token) or `failed_authentications` (per address)."
    );
    describe_gauge!(
        "flagsvc_webhook_outbox_pending",
        "Webhook deliveries waiting to be made (counted up to 100,000), as the worker last saw."
    );
    describe_gauge!(
        "flagsvc_webhook_outbox_oldest_pending_seconds",
        "Age of the oldest waiting webhook delivery, as the worker last saw."
    );
    describe_counter!(
        "flagsvc_webhook_delivery_attempts_total",
        "Webhook delivery attempts by outcome: delivered, failed_will_retry, failed_gave_up."
    );
    describe_counter!(
        "flagsvc_background_runs_total",
        "Runs of each background job (label `job`, e.g. webhook_delivery), by outcome: ok or failed."
    );
    describe_counter!(
        "flagsvc_background_items_total",
        "Items of due work that each background job (label `job`) took (webhook deliveries attempted)."
    );
    for name in [
        "flagsvc_db_conflicts_total",
        "flagsvc_db_transaction_retries_total",
        "flagsvc_auth_failures_total",
    ] {
        metrics::counter!(name).increment(0);
    }
    for limit in ["requests", "failed_authentications"] {
        metrics::counter!("flagsvc_rate_limit_rejections_total", "limit" => limit).increment(0);
    }
    for outcome in ["delivered", "failed_will_retry", "failed_gave_up"] {
        metrics::counter!("flagsvc_webhook_delivery_attempts_total", "outcome" => outcome)
            .increment(0);
    }
}

/// `GET /metrics`: the Prometheus text exposition; 404 when no recorder was installed.
pub async fn metrics() -> HttpResponse {
    match HANDLE.get() {
        Some(handle) => HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4; charset=utf-8")
            .body(handle.render()),
        None => HttpResponse::NotFound().finish(),
    }
}

/// An application serving only `GET /metrics`, for a listener of its own (`--metrics-bind`).
pub fn metrics_app() -> actix_web::App<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    actix_web::App::new().route("/metrics", web::get().to(metrics))
}

/// Requests in flight, counted while this lives (also when the request is dropped unanswered).
pub(crate) struct InFlight;

impl InFlight {
    pub(crate) fn start() -> Self {
        metrics::gauge!("flagsvc_http_requests_in_flight").increment(1.0);
        Self
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics::gauge!("flagsvc_http_requests_in_flight").decrement(1.0);
    }
}

/// Counts an answered request: by route pattern (`unmatched` for no route), method and status.
pub(crate) fn answered(route: &str, method: &str, status: u16, took: Duration) {
    let status = status.to_string();
    let labels = [
        ("route", route.to_owned()),
        ("method", method.to_owned()),
        ("status", status),
    ];
    metrics::counter!("flagsvc_http_requests_total", &labels).increment(1);
    metrics::histogram!("flagsvc_http_request_duration_seconds", &labels)
        .record(took.as_secs_f64());
}

#[cfg(test)]
mod tests {
    /// Test apps start on many threads at once, each installing the recorder: every call gets
    /// the one handle (two first calls at once used to make the second fail).
    #[test]
    fn first_installs_at_once_all_succeed() {
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|scope| {
            let calls: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        super::install().map(|_| ())
                    })
                })
                .collect();
            for call in calls {
                assert_eq!(
                    call.join()
                        .map_err(|_| "panicked")
                        .and_then(|r| r.map_err(|_| "failed")),
                    Ok(())
                );
            }
        });
    }
}
