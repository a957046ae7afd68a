//! The routes applications read flags on, with an environment's server-side SDK key:
//! - the server-side SDKs' data protocol: the stream `GET /all` (server-sent events) and
//!   polling `GET /sdk/latest-all` and its parts (`streaming`, `polling`);
//! - OpenFeature's remote evaluation protocol (OFREP 0.3.0), `POST /ofrep/v1/evaluate/flags/{key}`
//!   and `POST /ofrep/v1/evaluate/flags`.
//!
//! A driving adapter beside the API (mounted into the same server, or served alone on a
//! listener of its own): it calls the SDK-facing use cases (`service::Sdk`), never the
//! management API, the database or another adapter. An SDK key opens its own environment's flag
//! data and nothing else; evaluations read the environment's snapshot (`service` keeps it in
//! memory), so that an answer needs no database once the snapshot and the key are known.
//!
//! What the adapter needs from the server it is mounted in (failed-authentication throttling,
//! rate limits) it asks through [`Gate`], so that those count together with the API's.

mod answer;
mod gate;
mod key;
mod ofrep;
mod polling;
mod streaming;

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use service::Service;

pub use gate::{Gate, OpenGate};
pub use ofrep::MAX_BODY;

use gate::Shared;

/// The SDK routes over `service`, asking `gate`.
#[derive(Clone)]
pub struct SdkRoutes {
    shared: web::Data<Shared>,
}

impl std::fmt::Debug for SdkRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SdkRoutes").finish_non_exhaustive()
    }
}

impl SdkRoutes {
    /// The routes over `service`, throttled and limited by `gate`.
    pub fn new(service: Arc<Service>, gate: Arc<dyn Gate>) -> Self {
        Self {
            shared: web::Data::new(Shared {
                service,
                gate,
                max_connection_time: None,
            }),
        }
    }

    /// The same routes, ending every stream after `max` (so that load balancers rebalance:
    /// the SDKs reconnect); `None` lets streams stay open.
    pub fn with_max_connection_time(self, max: Option<Duration>) -> Self {
        let shared = Shared {
            service: self.shared.service.clone(),
            gate: self.shared.gate.clone(),
            max_connection_time: max.filter(|max| !max.is_zero()),
        };
        Self {
            shared: web::Data::new(shared),
        }
    }

    /// Registers the routes (OFREP under `/ofrep/v1`; the SDKs' polling under `/sdk`).
    pub fn configure(&self, routes: &mut web::ServiceConfig) {
        routes.service(
            web::resource("/all")
                .app_data(self.shared.clone())
                .route(web::get().to(streaming::all)),
        );
        routes.service(
            web::scope("/sdk")
                .app_data(self.shared.clone())
                .route("/latest-all", web::get().to(polling::latest_all))
                .route("/latest-flags", web::get().to(polling::latest_flags))
                .route("/latest-flags/{key}", web::get().to(polling::latest_flag))
                .route("/latest-segments", web::get().to(polling::latest_segments))
                .route(
                    "/latest-segments/{key}",
                    web::get().to(polling::latest_segment),
                )
                .route("/flags", web::get().to(polling::latest_flags))
                .route("/flags/{key}", web::get().to(polling::latest_flag))
                .route("/segments/{key}", web::get().to(polling::latest_segment))
                .default_service(web::to(polling::no_route)),
        );
        routes.service(
            web::scope("/ofrep/v1")
                .app_data(self.shared.clone())
                .route("/evaluate/flags", web::post().to(ofrep::evaluate_flags))
                .route(
                    "/evaluate/flags/{key}",
                    web::post().to(ofrep::evaluate_flag),
                )
                .default_service(web::to(ofrep::no_route)),
        );
    }
}
