//! OpenFeature's own SDKs with their OFREP providers, unmodified, against a running server
//! (part of `cargo xtask conformance`): Python (`openfeature-sdk` with
//! `openfeature-provider-ofrep` from PyPI, in a virtualenv of their own) and Node.js
//! (`@openfeature/server-sdk` with `@openfeature/ofrep-provider` from npm, at the versions
//! `xtask/openfeature/package-lock.json` pins). The checks are `xtask/openfeature/ofrep_*`.

use crate::clients::Kit;

/// OpenFeature's SDKs with their OFREP providers, and their checks.
pub(crate) const OPENFEATURE: Kit = Kit {
    name: "openfeature",
    what: "the OpenFeature SDKs and OFREP providers",
    python_packages: &[
        "openfeature-sdk==0.10.0",
        "openfeature-provider-ofrep==0.3.0",
    ],
    python_check: "ofrep_python.py",
    node_check: "ofrep_node.mjs",
};
