//! Who the client is: its address, as the peer or a trusted proxy tells it.

use std::net::{IpAddr, SocketAddr};

use actix_web::HttpRequest;

use crate::ClientKey;

/// Whom failed authentications are counted for: the peer address, or (when the proxy in front
/// is trusted) the last address of `X-Forwarded-For`, the one that proxy appended.
pub(crate) fn client_key(req: &HttpRequest, trust_forwarded_for: bool) -> ClientKey {
    ClientKey::of(client_ip(req, trust_forwarded_for))
}

/// The client's address: the peer's, or (behind a trusted proxy) the last `X-Forwarded-For`
/// entry.
pub(crate) fn client_ip(req: &HttpRequest, trust_forwarded_for: bool) -> Option<IpAddr> {
    let forwarded = trust_forwarded_for
        .then(|| {
            let last = req.headers().get_all("x-forwarded-for").last()?;
            let entry = last.to_str().ok()?.rsplit(',').next()?.trim();
            entry
                .parse::<IpAddr>()
                .ok()
                .or_else(|| entry.parse::<SocketAddr>().ok().map(|a| a.ip()))
        })
        .flatten();
    forwarded.or_else(|| req.peer_addr().map(|a| a.ip()))
}
