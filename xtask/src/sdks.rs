//! The original's server-side SDKs, unmodified, against a running server (part of
//! `cargo xtask conformance`): what applications run is what must work, so the SDKs themselves
//! stream and poll flagsvc's SDK routes, not a re-implementation of their protocol. Python
//! (`launchdarkly-server-sdk` from PyPI, in a virtualenv of its own) and Node.js
//! (`@launchdarkly/node-server-sdk` from npm, at the version `xtask/sdks/package-lock.json`
//! pins), each with every base URI set to the server and events off (flagsvc has no events
//! routes yet). The checks are `xtask/sdks/ld_*`: evaluations and their reasons, changes seen
//! within a second on the stream, archived and deleted flags, SDK key rotation and a bad key,
//! streaming and polling alike.

use crate::clients::Kit;

/// The original's server-side SDKs and their checks.
pub(crate) const SDKS: Kit = Kit {
    name: "sdks",
    what: "the original's server-side SDKs",
    python_packages: &["launchdarkly-server-sdk==9.20.0"],
    python_check: "ld_python.py",
    node_check: "ld_node.mjs",
};
