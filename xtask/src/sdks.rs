//! The original's server-side SDKs, unmodified, against a running server (part of
//! `cargo xtask conformance`): what applications run is what must work, so the SDKs themselves
//! stream and poll flagsvc's SDK routes, not a re-implementation of their protocol. Python
//! (`launchdarkly-server-sdk` from PyPI, in a virtualenv of its own) and Node.js
//! (`@launchdarkly/node-server-sdk` from npm, at the version `xtask/sdks/package-lock.json`
//! pins), each with every base URI set to the server and events off (flagsvc has no events
//! routes yet). The checks are `xtask/sdks/ld_*`: evaluations and their reasons, changes seen
//! within a second on the stream, archived and deleted flags, SDK key rotation and a bad key,
//! streaming and polling alike.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

/// The PyPI release the Python check runs.
const PYTHON_PACKAGE: &str = "launchdarkly-server-sdk==9.20.0";

/// Where the checks and the npm lockfile are.
fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sdks")
}

/// The installed SDKs.
pub(crate) struct Sdks {
    python: PathBuf,
    node_dir: PathBuf,
}

/// Installs both SDKs under `dir` on first use (again when a pinned version changes).
pub(crate) fn install(dir: &Path) -> Result<Sdks> {
    let venv = dir.join("sdks-venv");
    let python = venv.join("bin").join("python");
    let pinned = dir.join("sdks-venv.pinned");
    if std::fs::read_to_string(&pinned).ok().as_deref() != Some(PYTHON_PACKAGE) {
        println!("conformance: installing {PYTHON_PACKAGE}");
        let system = ["python3", "python"]
            .into_iter()
            .find(|p| Command::new(p).arg("--version").output().is_ok())
            .context("the SDK check needs Python 3 with venv and pip")?;
        crate::process::run(Command::new(system).args(["-m", "venv"]).arg(&venv))
            .context("creating the SDKs' virtualenv")?;
        crate::process::run(
            Command::new(venv.join("bin").join("pip"))
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .arg(PYTHON_PACKAGE),
        )
        .context("installing the original's Python server SDK from PyPI")?;
        std::fs::write(&pinned, PYTHON_PACKAGE)?;
    }
    let node_dir = dir.join("sdks-node");
    let lock = std::fs::read(sources().join("package-lock.json"))?;
    if std::fs::read(node_dir.join("package-lock.json")).ok() != Some(lock.clone()) {
        println!("conformance: installing the original's Node.js server SDK");
        std::fs::create_dir_all(&node_dir)?;
        std::fs::copy(
            sources().join("package.json"),
            node_dir.join("package.json"),
        )?;
        std::fs::write(node_dir.join("package-lock.json"), &lock)?;
        crate::process::run(
            Command::new("npm")
                .args(["ci", "--silent", "--no-audit", "--no-fund"])
                .current_dir(&node_dir),
        )
        .context("installing the original's Node.js server SDK (npm ci; needs Node.js 18+)")?;
    }
    // Beside its node_modules, so that its imports resolve there.
    std::fs::copy(sources().join("ld_node.mjs"), node_dir.join("ld_node.mjs"))?;
    Ok(Sdks { python, node_dir })
}

/// Runs both checks against the server at `origin` as the owner (`token`); true when both pass.
pub(crate) fn check(sdks: &Sdks, origin: &str, token: &str) -> Result<bool> {
    let python = Command::new(&sdks.python)
        .arg(sources().join("ld_python.py"))
        .args([origin, token])
        .status()
        .context("running the original's Python SDK check")?
        .success();
    let node = Command::new("node")
        .arg("ld_node.mjs")
        .args([origin, token])
        .current_dir(&sdks.node_dir)
        .status()
        .context("running the original's Node.js SDK check")?
        .success();
    Ok(python && node)
}
