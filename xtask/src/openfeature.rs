//! OpenFeature's own SDKs with their OFREP providers, unmodified, against a running server
//! (part of `cargo xtask conformance`): Python (`openfeature-sdk` with
//! `openfeature-provider-ofrep` from PyPI, in a virtualenv of their own) and Node.js
//! (`@openfeature/server-sdk` with `@openfeature/ofrep-provider` from npm, at the versions
//! `xtask/openfeature/package-lock.json` pins). The checks are `xtask/openfeature/ofrep_*`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

/// The PyPI releases the Python check runs.
const PYTHON_PACKAGES: [&str; 2] = [
    "openfeature-sdk==0.10.0",
    "openfeature-provider-ofrep==0.3.0",
];

/// Where the checks and the npm lockfile are.
fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("openfeature")
}

/// The installed clients.
pub(crate) struct Clients {
    python: PathBuf,
    node_dir: PathBuf,
}

/// Installs both clients under `dir` on first use (again when a pinned version changes).
pub(crate) fn install(dir: &Path) -> Result<Clients> {
    let venv = dir.join("openfeature-venv");
    let python = venv.join("bin").join("python");
    let pinned = dir.join("openfeature-venv.pinned");
    let wanted = PYTHON_PACKAGES.join("\n");
    if std::fs::read_to_string(&pinned).ok().as_deref() != Some(wanted.as_str()) {
        println!("conformance: installing {}", PYTHON_PACKAGES.join(", "));
        let system = ["python3", "python"]
            .into_iter()
            .find(|p| Command::new(p).arg("--version").output().is_ok())
            .context("the OpenFeature check needs Python 3 with venv and pip")?;
        crate::process::run(Command::new(system).args(["-m", "venv"]).arg(&venv))
            .context("creating the OpenFeature virtualenv")?;
        crate::process::run(
            Command::new(venv.join("bin").join("pip"))
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .args(PYTHON_PACKAGES),
        )
        .context("installing the OpenFeature Python SDK and OFREP provider from PyPI")?;
        std::fs::write(&pinned, &wanted)?;
    }
    let node_dir = dir.join("openfeature-node");
    let lock = std::fs::read(sources().join("package-lock.json"))?;
    if std::fs::read(node_dir.join("package-lock.json")).ok() != Some(lock.clone()) {
        println!("conformance: installing the OpenFeature Node.js SDK and OFREP provider");
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
        .context("installing the OpenFeature Node.js packages (npm ci; needs Node.js 18+)")?;
    }
    std::fs::copy(
        sources().join("ofrep_node.mjs"),
        node_dir.join("ofrep_node.mjs"),
    )?;
    Ok(Clients { python, node_dir })
}

/// Runs both checks against the server at `origin` as the owner (`token`); true when both pass.
pub(crate) fn check(clients: &Clients, origin: &str, token: &str) -> Result<bool> {
    let python = Command::new(&clients.python)
        .arg(sources().join("ofrep_python.py"))
        .args([origin, token])
        .status()
        .context("running the OpenFeature Python check")?
        .success();
    let node = Command::new("node")
        .arg("ofrep_node.mjs")
        .args([origin, token])
        .current_dir(&clients.node_dir)
        .status()
        .context("running the OpenFeature Node.js check")?
        .success();
    Ok(python && node)
}
