//! Where a webhook may point: the URL's syntax, and which hosts and addresses are public.
//!
//! A webhook URL is read with the WHATWG URL standard (the `url` crate), which is how
//! `http://2130706433/` comes to mean `127.0.0.1`; the URL that is checked is the URL that is
//! sent ([`WebhookTarget::url`] is the parser's serialisation), so the check and the HTTP client
//! never read two different hosts. By default a webhook may reach only public (global unicast)
//! addresses; [`TargetPolicy`] says when private ones are allowed too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Parses a webhook URL: absolute, `http` or `https`, with a host, and nothing an HTTP client
/// could read differently from this parser: no user information (`user@`), no backslash, no
/// whitespace or control character.
///
/// ```
/// use domain::webhook::target::parse_url;
/// assert_eq!(parse_url("http://2130706433/x").unwrap().host_str(), Some("127.0.0.1"));
/// assert!(parse_url("ftp://example.com").is_err());
/// assert!(parse_url("http://127.0.0.1:1\\@example.com:2/").is_err());
/// assert!(parse_url("https://user@example.com/").is_err());
/// ```
///
/// # Errors
/// A message saying what is wrong with the URL.
pub fn parse_url(url: &str) -> Result<Url, String> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("a URL has no whitespace or control characters".into());
    }
    if url.contains('\\') {
        return Err("a URL has no backslash ('\\'); write '/'".into());
    }
    let parsed = Url::parse(url).map_err(|e| format!("'{url}' is not a valid URL ({e})"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs can receive webhooks, not '{}'",
            parsed.scheme()
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("a webhook URL has no user information ('user@'); use a signing secret".into());
    }
    match parsed.host() {
        Some(Host::Domain(d)) if d.trim_end_matches('.').is_empty() => {
            Err(format!("'{url}' has no host"))
        }
        Some(_) => Ok(parsed),
        None => Err(format!("'{url}' has no host")),
    }
}

/// The host of a webhook URL, as an HTTP client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetHost {
    /// A name to resolve (lower case, IDNA-encoded, without a trailing dot).
    Name(String),
    /// An address, in whatever form the URL wrote it.
    Ip(IpAddr),
}

impl std::fmt::Display for TargetHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetHost::Name(name) => f.write_str(name),
            TargetHost::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

fn target_host(url: &Url) -> Option<TargetHost> {
    match url.host()? {
        Host::Domain(d) => Some(TargetHost::Name(
            d.trim_end_matches('.').to_ascii_lowercase(),
        )),
        Host::Ipv4(ip) => Some(TargetHost::Ip(IpAddr::V4(ip))),
        Host::Ipv6(ip) => Some(TargetHost::Ip(IpAddr::V6(ip))),
    }
}

/// Which webhook targets are allowed: by default only public hosts and addresses.
///
/// ```
/// use domain::webhook::target::TargetPolicy;
/// let default = TargetPolicy::default();
/// assert!(default.check("https://hooks.example.com/x").is_ok());
/// assert!(default.check("http://169.254.169.254/latest/meta-data/").is_err());
/// assert!(default.check("http://localhost:8080/").is_err());
/// let lab = TargetPolicy { allow_private_networks: true, ..TargetPolicy::default() };
/// assert!(lab.check("http://localhost:8080/").is_ok());
/// let listed = TargetPolicy { allowed_hosts: Some(vec!["hooks.example.com".into()]), ..TargetPolicy::default() };
/// assert!(listed.check("https://other.example.com/").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Allow private, loopback, link-local and other non-public addresses and local names.
    pub allow_private_networks: bool,
    /// The only hosts webhooks may point at (`None`: any). A listed host is trusted: it may be
    /// or resolve to a private address.
    pub allowed_hosts: Option<Vec<String>>,
}

impl TargetPolicy {
    /// Checks a URL by its syntax, the allow-list, and its host as written (an address, or a
    /// name that is local by definition); a name's addresses are checked once it is resolved,
    /// with [`WebhookTarget::check_addresses`].
    ///
    /// ```
    /// use domain::webhook::target::{TargetHost, TargetPolicy};
    /// let target = TargetPolicy::default().check("https://Hooks.Example.com./in").unwrap();
    /// assert_eq!(target.host(), TargetHost::Name("hooks.example.com".into()));
    /// assert_eq!(target.port(), 443);
    /// let err = TargetPolicy::default().check("http://2130706433/").unwrap_err();
    /// assert!(err.contains("'127.0.0.1'") && err.contains("loopback"), "{err}");
    /// ```
    ///
    /// # Errors
    /// A message saying why the URL is refused.
    pub fn check(&self, url: &str) -> Result<WebhookTarget, String> {
        let parsed = parse_url(url)?;
        let host = target_host(&parsed).ok_or_else(|| format!("'{url}' has no host"))?;
        let listed = match &self.allowed_hosts {
            None => false,
            Some(hosts) => {
                let shown = host.to_string();
                let bracketed = format!("[{shown}]");
                if !hosts.iter().any(|h| {
                    let h = h.trim().trim_end_matches('.');
                    h.eq_ignore_ascii_case(&shown) || h.eq_ignore_ascii_case(&bracketed)
                }) {
                    return Err(format!(
                        "webhooks may not point at host '{shown}' (allowed: {})",
                        hosts.join(", ")
                    ));
                }
                true
            }
        };
        let target = WebhookTarget {
            port: parsed.port_or_known_default().unwrap_or(80),
            url: parsed,
            host,
            private_allowed: self.allow_private_networks || listed,
        };
        if !target.private_allowed {
            match &target.host {
                TargetHost::Ip(ip) => target.check_addresses(&[*ip])?,
                TargetHost::Name(name) => {
                    if let Some(why) = local_name(name) {
                        return Err(format!("'{name}' is {why}; {PUBLIC_ONLY}"));
                    }
                }
            }
        }
        Ok(target)
    }
}

const PUBLIC_ONLY: &str =
    "webhooks reach only public addresses unless the service is configured to allow private networks";

/// A webhook URL that passed [`TargetPolicy::check`]: what to connect to, and whether
/// non-public addresses are allowed for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookTarget {
    url: Url,
    host: TargetHost,
    port: u16,
    private_allowed: bool,
}

impl WebhookTarget {
    /// The URL to send to: the parser's serialisation, which any HTTP client reads alike.
    ///
    /// ```
    /// use domain::webhook::target::TargetPolicy;
    /// let target = TargetPolicy::default().check("HTTPS://Hooks.Example.COM/In").unwrap();
    /// assert_eq!(target.url(), "https://hooks.example.com/In");
    /// ```
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The host to connect to: a name to resolve, or an address.
    ///
    /// ```
    /// use domain::webhook::target::{TargetHost, TargetPolicy};
    /// let target = TargetPolicy::default().check("http://[2606:4700::1]:8080/").unwrap();
    /// assert_eq!(target.host(), TargetHost::Ip("2606:4700::1".parse().unwrap()));
    /// ```
    pub fn host(&self) -> TargetHost {
        self.host.clone()
    }

    /// The port (the scheme's default when the URL names none).
    ///
    /// ```
    /// use domain::webhook::target::TargetPolicy;
    /// assert_eq!(TargetPolicy::default().check("http://hooks.example.com/").unwrap().port(), 80);
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether non-public addresses are allowed for this target (by configuration).
    ///
    /// ```
    /// use domain::webhook::target::TargetPolicy;
    /// assert!(!TargetPolicy::default().check("http://hooks.example.com/").unwrap().private_allowed());
    /// ```
    pub fn private_allowed(&self) -> bool {
        self.private_allowed
    }

    /// Checks the addresses the host resolved to: every one must be public, unless private
    /// networks are allowed for this target. Refuses an empty list.
    ///
    /// ```
    /// use domain::webhook::target::TargetPolicy;
    /// let target = TargetPolicy::default().check("https://hooks.example.com/").unwrap();
    /// assert!(target.check_addresses(&["93.184.215.14".parse().unwrap()]).is_ok());
    /// let rebound = target.check_addresses(&["93.184.215.14".parse().unwrap(), "127.0.0.1".parse().unwrap()]);
    /// assert!(rebound.unwrap_err().contains("loopback"));
    /// ```
    ///
    /// # Errors
    /// A message naming the host and the kind of address it is or resolves to.
    pub fn check_addresses(&self, addresses: &[IpAddr]) -> Result<(), String> {
        if addresses.is_empty() {
            return Err(format!("'{}' has no address", self.host));
        }
        if self.private_allowed {
            return Ok(());
        }
        for ip in addresses {
            if let Some(why) = non_public(*ip) {
                return Err(match self.host {
                    TargetHost::Ip(_) => format!("'{}' is {why}; {PUBLIC_ONLY}", self.host),
                    TargetHost::Name(_) => {
                        format!("'{}' resolves to {why}; {PUBLIC_ONLY}", self.host)
                    }
                });
            }
        }
        Ok(())
    }
}

/// Why a host name is local by definition, if it is: `localhost` and `*.localhost` (RFC 6761),
/// `*.local` (mDNS), `*.internal` (private use, e.g. `metadata.google.internal`), `*.home.arpa`,
/// `*.localdomain`, `metadata.goog`, and any name without a dot (completed by local search
/// domains: `metadata`, `instance-data`, `intranet`).
///
/// ```
/// use domain::webhook::target::local_name;
/// assert!(local_name("metadata.google.internal").is_some());
/// assert!(local_name("intranet").is_some());
/// assert!(local_name("hooks.example.com").is_none());
/// ```
pub fn local_name(name: &str) -> Option<&'static str> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let under = |zone: &str| name == zone || name.ends_with(&format!(".{zone}"));
    if under("localhost") {
        Some("a loopback name")
    } else if under("metadata.goog") || under("internal") {
        Some("a cloud-internal or private-use name")
    } else if under("local") || under("home.arpa") || under("localdomain") {
        Some("a local-network name")
    } else if !name.contains('.') {
        Some("a single-label name (completed by local search domains)")
    } else {
        None
    }
}

/// Why an address is not public, if it is not: loopback, private (RFC 1918), link-local,
/// unique-local, unspecified, shared (CGNAT), broadcast, multicast, documentation,
/// benchmarking and other reserved ranges of the IANA special-purpose registries, for IPv4 and
/// IPv6; an IPv6 address that embeds an IPv4 one (mapped, compatible, NAT64, 6to4) is judged
/// by the IPv4 address. Only `2000::/3` is global unicast IPv6.
///
/// ```
/// use domain::webhook::target::non_public;
/// assert_eq!(non_public("10.1.2.3".parse().unwrap()), Some("a private address"));
/// assert_eq!(non_public("::ffff:169.254.169.254".parse().unwrap()), Some("a link-local address"));
/// assert_eq!(non_public("93.184.215.14".parse().unwrap()), None);
/// assert_eq!(non_public("2606:4700::6810:85e5".parse().unwrap()), None);
/// ```
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

/// IPv4 special-purpose ranges: (network, prefix length, why).
const V4_RANGES: &[(u32, u8, &str)] = &[
    (0x0000_0000, 8, "a 'this network' address"),
    (0x0a00_0000, 8, "a private address"),
    (0x6440_0000, 10, "a shared (CGNAT) address"),
    (0x7f00_0000, 8, "a loopback address"),
    (0xa9fe_0000, 16, "a link-local address"),
    (0xac10_0000, 12, "a private address"),
    (0xc000_0000, 24, "an IETF protocol assignment address"),
    (0xc000_0200, 24, "a documentation address"),
    (0xc058_6300, 24, "a reserved (6to4 relay) address"),
    (0xc0a8_0000, 16, "a private address"),
    (0xc612_0000, 15, "a benchmarking address"),
    (0xc633_6400, 24, "a documentation address"),
    (0xcb00_7100, 24, "a documentation address"),
    (0xe000_0000, 4, "a multicast address"),
    (0xf000_0000, 4, "a reserved address"),
];

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("the unspecified address");
    }
    if ip.is_broadcast() {
        return Some("a broadcast address");
    }
    let bits = u32::from(ip);
    V4_RANGES
        .iter()
        .find(|(network, len, _)| {
            bits >> (32 - u32::from(*len)) == network >> (32 - u32::from(*len))
        })
        .map(|(_, _, why)| *why)
}

/// IPv6 special-purpose ranges inside or beside `2000::/3`: (network, prefix length, why).
const V6_RANGES: &[(u128, u8, &str)] = &[
    (0x0064_ff9b_0001 << 80, 48, "a local-use NAT64 address"),
    (0x0100 << 112, 64, "a discard-only address"),
    (0x2001 << 112, 23, "an IETF protocol assignment address"),
    (0x2001_0db8 << 96, 32, "a documentation address"),
    (0x3fff << 112, 20, "a documentation address"),
    (0x5f00 << 112, 16, "a segment-routing address"),
    (0xfc00 << 112, 7, "a unique-local address"),
    (0xfe80 << 112, 10, "a link-local address"),
    (0xfec0 << 112, 10, "a site-local address"),
    (0xff00 << 112, 8, "a multicast address"),
];

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("the unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from(u32::try_from(bits & 0xffff_ffff).unwrap_or_default());
    // ::ffff:0:0/96 (mapped) and ::/96 (compatible, deprecated): the IPv4 address decides.
    if bits >> 32 == 0xffff || bits >> 32 == 0 {
        return non_public_v4(low32);
    }
    // 64:ff9b::/96, NAT64: the IPv4 address decides.
    if bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
        return non_public_v4(low32);
    }
    // 2002::/16, 6to4: the IPv4 address in bits 16..48 decides.
    if bits >> 112 == 0x2002 {
        let embedded = u32::try_from((bits >> 80) & 0xffff_ffff).unwrap_or_default();
        return non_public_v4(Ipv4Addr::from(embedded));
    }
    if let Some((_, _, why)) = V6_RANGES.iter().find(|(network, len, _)| {
        bits >> (128 - u32::from(*len)) == network >> (128 - u32::from(*len))
    }) {
        return Some(why);
    }
    if bits >> 125 != 0b001 {
        return Some("a reserved address (outside 2000::/3)");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn special_purpose_addresses_are_not_public() {
        for (address, why) in [
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "this network"),
            ("10.0.0.1", "private"),
            ("100.64.0.0", "shared"),
            ("100.127.255.255", "shared"),
            ("127.0.0.1", "loopback"),
            ("127.255.255.254", "loopback"),
            ("169.254.169.254", "link-local"),
            ("172.16.0.0", "private"),
            ("172.31.255.255", "private"),
            ("192.0.0.192", "IETF"),
            ("192.0.2.1", "documentation"),
            ("192.88.99.1", "6to4"),
            ("192.168.0.1", "private"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.255", "benchmarking"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.9", "documentation"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.255", "broadcast"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("::127.0.0.1", "loopback"),
            ("::0.0.0.0", "unspecified"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("64:ff9b:1::1", "NAT64"),
            ("2002:7f00:1::", "loopback"),
            ("2002:c0a8:101::1", "private"),
            ("100::1", "discard"),
            ("2001::1", "IETF"),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("fc00::1", "unique-local"),
            ("fdff:ffff::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("ff0e::1", "multicast"),
            ("4000::1", "reserved"),
            ("1::", "reserved"),
        ] {
            let got = non_public(ip(address));
            assert!(
                got.is_some_and(|g| g.contains(why)),
                "{address}: {got:?}, expected {why}"
            );
        }
    }

    #[test]
    fn public_addresses_are_public() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.1",
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:200::1",
            "2606:4700::6810:85e5",
            "2a00:1450:4001:80b::200e",
        ] {
            assert_eq!(non_public(ip(address)), None, "{address}");
        }
    }

    #[test]
    fn hosts_are_read_as_an_http_client_reads_them() {
        let policy = TargetPolicy::default();
        for (url, host) in [
            ("http://2130706433/", "127.0.0.1"),
            ("http://0x7f000001/", "127.0.0.1"),
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://017700000001/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://127.1/", "127.0.0.1"),
            ("http://127.0.0.%31/", "127.0.0.1"),
            ("http://127.0.0.1./", "127.0.0.1"),
            ("http://\u{ff11}\u{ff12}\u{ff17}.0.0.1/", "127.0.0.1"),
            ("http://169.254.169.254\u{3002}/", "169.254.169.254"),
            ("http://0/", "0.0.0.0"),
            ("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1"),
            ("http://[0:0:0:0:0:0:0:1]/", "::1"),
        ] {
            let err = policy.check(url).unwrap_err();
            assert!(err.starts_with(&format!("'{host}' is ")), "{url}: {err}");
        }
    }

    #[test]
    fn local_names_are_refused_unless_allowed() {
        let policy = TargetPolicy::default();
        for url in [
            "http://localhost/",
            "http://LocalHost./",
            "http://a.b.localhost/",
            "http://metadata.google.internal/",
            "http://metadata.goog/",
            "http://metadata/",
            "http://instance-data/",
            "http://printer.local/",
            "http://nas.home.arpa/",
            "http://localhost.localdomain/",
        ] {
            assert!(policy.check(url).is_err(), "{url}");
        }
        let open = TargetPolicy {
            allow_private_networks: true,
            ..TargetPolicy::default()
        };
        for url in ["http://localhost:1/", "http://10.0.0.1/", "http://[::1]/"] {
            let target = open.check(url).unwrap();
            assert!(target.check_addresses(&[ip("127.0.0.1")]).is_ok());
        }
    }

    #[test]
    fn allow_listed_hosts_are_trusted_and_others_refused() {
        let policy = TargetPolicy {
            allow_private_networks: false,
            allowed_hosts: Some(vec!["localhost".into(), "[::1]".into()]),
        };
        let target = policy.check("http://LOCALHOST:9000/").unwrap();
        assert!(target.private_allowed());
        assert!(target.check_addresses(&[ip("127.0.0.1")]).is_ok());
        assert!(policy.check("http://[::1]/").is_ok());
        for url in [
            "http://127.0.0.1:1\\@localhost:2/",
            "http://127.0.0.1/",
            "http://localhost@127.0.0.1/",
            "http://127.0.0.1#@localhost/",
        ] {
            assert!(policy.check(url).is_err(), "{url}");
        }
    }

    #[test]
    fn a_name_is_refused_when_any_address_is_not_public() {
        let target = TargetPolicy::default()
            .check("https://hooks.example.com/")
            .unwrap();
        assert!(target.check_addresses(&[]).is_err());
        let err = target
            .check_addresses(&[ip("8.8.8.8"), ip("fd00::1")])
            .unwrap_err();
        assert_eq!(
            err,
            format!("'hooks.example.com' resolves to a unique-local address; {PUBLIC_ONLY}")
        );
    }

    #[test]
    fn ambiguous_urls_are_refused() {
        for url in [
            "http://user@hooks.example.com/",
            "http://:pass@hooks.example.com/",
            "http://hooks.example.com\\@127.0.0.1/",
            "http://hooks.example.com\t/",
            "http://hooks.example.com\n/",
            "http://hooks.example.com /",
            "http://./",
            "http://[::1/",
            "javascript:alert(1)",
            "file:///etc/passwd",
        ] {
            assert!(parse_url(url).is_err(), "{url}");
        }
    }
}
