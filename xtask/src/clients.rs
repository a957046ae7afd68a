//! Real clients, unmodified, installed from their registries and run against a running server
//! (part of `cargo xtask conformance`): a Python check in a virtualenv of its own (packages from
//! PyPI at pinned versions) and a Node.js check (packages from npm at the versions a committed
//! `package-lock.json` pins). `openfeature` and `sdks` name what they install and run.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

/// One kit of client checks: where its sources are and what it installs.
pub(crate) struct Kit {
    /// The directory under `xtask/` with the checks, `package.json` and `package-lock.json`;
    /// also the prefix of its install directories.
    pub(crate) name: &'static str,
    /// What it is, for messages ("the OpenFeature SDKs").
    pub(crate) what: &'static str,
    /// The PyPI releases the Python check runs.
    pub(crate) python_packages: &'static [&'static str],
    /// The checks' file names, in `xtask/{name}/`.
    pub(crate) python_check: &'static str,
    pub(crate) node_check: &'static str,
}

impl Kit {
    fn sources(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(self.name)
    }
}

/// A kit, installed.
pub(crate) struct Installed {
    kit: &'static Kit,
    python: PathBuf,
    node_dir: PathBuf,
}

/// Installs `kit` under `dir` on first use (again when a pinned version changes).
pub(crate) fn install(dir: &Path, kit: &'static Kit) -> Result<Installed> {
    let venv = dir.join(format!("{}-venv", kit.name));
    let python = venv.join("bin").join("python");
    let pinned = dir.join(format!("{}-venv.pinned", kit.name));
    let wanted = kit.python_packages.join("\n");
    if std::fs::read_to_string(&pinned).ok().as_deref() != Some(wanted.as_str()) {
        println!("conformance: installing {}", kit.python_packages.join(", "));
        let system = ["python3", "python"]
            .into_iter()
            .find(|p| Command::new(p).arg("--version").output().is_ok())
            .with_context(|| format!("{} need Python 3 with venv and pip", kit.what))?;
        crate::process::run(Command::new(system).args(["-m", "venv"]).arg(&venv))
            .with_context(|| format!("creating the virtualenv of {}", kit.what))?;
        crate::process::run(
            Command::new(venv.join("bin").join("pip"))
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .args(kit.python_packages),
        )
        .with_context(|| format!("installing {} from PyPI", kit.what))?;
        std::fs::write(&pinned, &wanted)?;
    }
    let node_dir = dir.join(format!("{}-node", kit.name));
    let lock = std::fs::read(kit.sources().join("package-lock.json"))?;
    if std::fs::read(node_dir.join("package-lock.json")).ok() != Some(lock.clone()) {
        println!("conformance: installing {} for Node.js", kit.what);
        std::fs::create_dir_all(&node_dir)?;
        std::fs::copy(
            kit.sources().join("package.json"),
            node_dir.join("package.json"),
        )?;
        std::fs::write(node_dir.join("package-lock.json"), &lock)?;
        crate::process::run(
            Command::new("npm")
                .args(["ci", "--silent", "--no-audit", "--no-fund"])
                .current_dir(&node_dir),
        )
        .with_context(|| format!("installing {} (npm ci; needs Node.js 18+)", kit.what))?;
    }
    // Beside its node_modules, so that its imports resolve there.
    std::fs::copy(
        kit.sources().join(kit.node_check),
        node_dir.join(kit.node_check),
    )?;
    Ok(Installed {
        kit,
        python,
        node_dir,
    })
}

/// Runs both checks against the server at `origin` as the owner (`token`); true when both pass.
pub(crate) fn check(installed: &Installed, origin: &str, token: &str) -> Result<bool> {
    let kit = installed.kit;
    let python = Command::new(&installed.python)
        .arg(kit.sources().join(kit.python_check))
        .args([origin, token])
        .status()
        .with_context(|| format!("running the Python check of {}", kit.what))?
        .success();
    let node = Command::new("node")
        .arg(kit.node_check)
        .args([origin, token])
        .current_dir(&installed.node_dir)
        .status()
        .with_context(|| format!("running the Node.js check of {}", kit.what))?
        .success();
    Ok(python && node)
}
