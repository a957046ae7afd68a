//! Structure rules that `check-deps` holds the workspace to, beside the dependency rules:
//!
//! - no import circles between the files of any crate (`modules`: a file imports another when it
//!   names an item that the other defines);
//! - sizes a reader can hold: a production file at most [`MAX_PRODUCTION_LINES`] lines before its
//!   `#[cfg(test)]` part, a test file (or a file's test part) at most [`MAX_TEST_LINES`]. The
//!   length of functions is clippy's `too_many_lines` (threshold in `clippy.toml`), denied in CI.

mod modules;
mod use_cases;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use regex::Regex;

pub use use_cases::check_use_cases_take_permits;

pub const MAX_PRODUCTION_LINES: usize = 800;

pub const MAX_TEST_LINES: usize = 1000;

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The roots of every crate's module trees: `src/lib.rs` and `src/main.rs`.
fn crate_roots(root: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .context("reading crates/")?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    dirs.push(root.join("xtask"));
    dirs.sort();
    let mut roots = Vec::new();
    for dir in dirs {
        for file in ["src/lib.rs", "src/main.rs"] {
            let path = dir.join(file);
            if path.exists() {
                roots.push(path);
            }
        }
    }
    Ok(roots)
}

/// Fails, naming every circle and what ties it, if the files of a crate import each other in a
/// loop.
pub fn check_circles() -> Result<()> {
    let root = workspace_root();
    let mut report = Vec::new();
    let roots = crate_roots(&root)?;
    for crate_root in &roots {
        let tree = modules::ModuleTree::read(crate_root)?;
        let edges = tree.edges();
        for circle in strongly_connected(tree.files.len(), &edges) {
            let name = |i: usize| relative(&root, &tree.files[i].path);
            let mut lines = vec![format!(
                "circle of {} files: {}",
                circle.len(),
                circle
                    .iter()
                    .map(|&i| name(i))
                    .collect::<Vec<_>>()
                    .join(", ")
            )];
            for &from in &circle {
                for (to, names) in edges.get(&from).into_iter().flatten() {
                    if circle.contains(to) {
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        lines.push(format!(
                            "  {} -> {}: {}",
                            name(from),
                            name(*to),
                            names.join(", ")
                        ));
                    }
                }
            }
            report.push(lines.join("\n"));
        }
    }
    if !report.is_empty() {
        bail!(
            "{} import circles (break each by moving what both sides need into a module of \
             its own, below both):\n{}",
            report.len(),
            report.join("\n")
        );
    }
    println!(
        "check-deps: no import circles in the {} module trees",
        roots.len()
    );
    Ok(())
}

/// Tarjan's strongly connected components of more than one file.
fn strongly_connected(
    count: usize,
    edges: &BTreeMap<usize, BTreeMap<usize, std::collections::BTreeSet<String>>>,
) -> Vec<Vec<usize>> {
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    fn visit(
        v: usize,
        s: &mut State,
        edges: &BTreeMap<usize, BTreeMap<usize, std::collections::BTreeSet<String>>>,
    ) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in edges.get(&v).map(|m| m.keys()).into_iter().flatten() {
            match s.index[w] {
                None => {
                    visit(w, s, edges);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        index: vec![None; count],
        low: vec![0; count],
        on_stack: vec![false; count],
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..count {
        if state.index[v].is_none() {
            visit(v, &mut state, edges);
        }
    }
    state.found
}

pub(crate) fn relative(root: &Path, path: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(&root)
        .unwrap_or(&path)
        .display()
        .to_string()
}

/// Where a thread or task may be started outside `crates/background`, and why: none of them
/// is a loop of due work.
const THREADS_ELSEWHERE: [(&str, &str); 3] = [
    (
        "crates/adapter-sql/src/feed.rs",
        "the store's listener of other replicas' commits (what Store::subscribe promises)",
    ),
    (
        "crates/adapter-webhooks/src/lib.rs",
        "one host lookup with a timeout (the system resolver has none)",
    ),
    (
        "crates/adapter-redis/src/lib.rs",
        "one task that opens the Redis connection without making a request wait",
    ),
];

/// What starts a thread or a task.
const SPAWNS: [&str; 7] = [
    "thread::Builder::new()",
    "thread::spawn(",
    "tokio::spawn(",
    "task::spawn(",
    "spawn_blocking(",
    "rt::spawn(",
    "Builder::new().name(",
];

/// Fails if production code outside `crates/background` starts a thread or task, but for
/// [`THREADS_ELSEWHERE`]: loops of due work have one home, one pattern.
pub fn check_background_loops() -> Result<()> {
    let (root, files) = crate_sources()?;
    let mut found = Vec::new();
    for path in &files {
        let name = relative(&root, path);
        if is_test_file(&name)
            || name.starts_with("crates/background/")
            || !name.contains("/src/")
            || THREADS_ELSEWHERE.iter().any(|(file, _)| *file == name)
        {
            continue;
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let production = production_part(&text);
        for (number, line) in production.lines().enumerate() {
            if !line.trim_start().starts_with("//") && SPAWNS.iter().any(|s| line.contains(s)) {
                found.push(format!("{name}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    if !found.is_empty() {
        bail!(
            "threads or tasks started outside crates/background (make the work a background::Job, \
             or list the file in THREADS_ELSEWHERE with why it is no loop of due work):\n  {}",
            found.join("\n  ")
        );
    }
    println!("check-deps: only crates/background runs loops of due work");
    Ok(())
}

/// The one place outside `domain::policy` that decides a request by policies: the caller's
/// permissions, which `service::Caller` (admission and authorization) asks.
const DECIDES: &str = "crates/service/src/access.rs";

/// Fails if production code outside `domain::policy` and [`DECIDES`] calls the policy decision
/// functions (`decide`, `decide_each`, `decide_in_environments`): "may this actor do this" is
/// decided in one place.
pub fn check_one_decider() -> Result<()> {
    let (root, files) = crate_sources()?;
    let calls = Regex::new(
        r"(^|[^.\w])(policy::)?decide(_each|_in_environments)?\s*\(|use domain::policy::\{[^}]*\bdecide|domain::policy::decide",
    )?;
    let mut found = Vec::new();
    for path in &files {
        let name = relative(&root, path);
        if is_test_file(&name)
            || !name.contains("/src/")
            || name.starts_with("crates/domain/src/policy")
            || name == DECIDES
        {
            continue;
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let production = production_part(&text);
        for (number, line) in production.lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//") && calls.is_match(line) && !code.contains("fn decide") {
                found.push(format!("{name}:{}: {code}", number + 1));
            }
        }
    }
    if !found.is_empty() {
        bail!(
            "the policy decision is asked outside {DECIDES} (ask the caller's permissions \
             instead):\n  {}",
            found.join("\n  ")
        );
    }
    println!("check-deps: only {DECIDES} asks domain::policy to decide");
    Ok(())
}

/// Fails, naming each file, if a file is longer than the limits allow.
pub fn check_sizes() -> Result<()> {
    let (root, mut files) = crate_sources()?;
    collect_rust_files(&root.join("xtask"), &mut files)?;
    let mut over = Vec::new();
    for path in &files {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let name = relative(&root, path);
        let lines: Vec<&str> = text.lines().collect();
        if is_test_file(&name) {
            if lines.len() > MAX_TEST_LINES {
                over.push(format!("{name}: a test file of {} lines", lines.len()));
            }
            continue;
        }
        let production = production_part(&text).lines().count();
        if production > MAX_PRODUCTION_LINES {
            over.push(format!(
                "{name}: {production} lines before its tests (at most {MAX_PRODUCTION_LINES})"
            ));
        }
        let tests = lines.len() - production;
        if tests > MAX_TEST_LINES {
            over.push(format!(
                "{name}: a test part of {tests} lines (at most {MAX_TEST_LINES})"
            ));
        }
    }
    if !over.is_empty() {
        bail!(
            "files over the size limits (split them by purpose):\n  {}",
            over.join("\n  ")
        );
    }
    println!(
        "check-deps: {} Rust files within {MAX_PRODUCTION_LINES} production and {MAX_TEST_LINES} test lines",
        files.len()
    );
    Ok(())
}

/// A file's production code: what comes before its test module (a top-level `#[cfg(test)]`
/// followed by `mod`); a `#[cfg(test)]` on one item, or inside an `impl`, does not end it.
pub(crate) fn production_part(text: &str) -> &str {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "#[cfg(test)]" && text[at + line.len()..].starts_with("mod ") {
            return &text[..at];
        }
        at += line.len();
    }
    text
}

/// The workspace's root and every Rust file under `crates/`.
pub(crate) fn crate_sources() -> Result<(PathBuf, Vec<PathBuf>)> {
    let root = workspace_root();
    let mut files = Vec::new();
    collect_rust_files(&root.join("crates"), &mut files)?;
    Ok((root, files))
}

/// Integration tests, benches, and the test modules kept in files of their own.
pub(crate) fn is_test_file(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    parts.iter().any(|part| {
        *part == "tests" || *part == "benches" || part.ends_with("_tests") || *part == "tests.rs"
    }) || name.ends_with("_tests.rs")
}

pub(crate) fn collect_rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                collect_rust_files(&path, out)?;
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    fn circles_of(files: &[(&str, &str)]) -> Vec<Vec<String>> {
        let dir = std::env::temp_dir().join(format!(
            "xtask-structure-{}-{}",
            std::process::id(),
            files.len() * 31 + files[1].1.len()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        write(&dir, files);
        let tree = modules::ModuleTree::read(&dir.join("lib.rs")).unwrap();
        let edges = tree.edges();
        let found = strongly_connected(tree.files.len(), &edges)
            .into_iter()
            .map(|c| {
                c.iter()
                    .map(|&i| relative(&dir, &tree.files[i].path))
                    .collect()
            })
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        found
    }

    #[test]
    fn a_parent_that_only_hands_names_on_is_no_circle() {
        let found = circles_of(&[
            ("lib.rs", "mod a;\nmod b;\npub use a::A;\npub use b::B;\n"),
            ("a.rs", "pub struct A;\n"),
            ("b.rs", "use crate::A;\npub struct B(A);\n"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn names_taken_both_ways_through_reexports_and_macros_are_a_circle() {
        let found = circles_of(&[
            (
                "lib.rs",
                "mod a;\nmod b;\npub use a::A;\npub use b::{helper, B};\n",
            ),
            (
                "a.rs",
                "pub struct A;\nfn f() { println!(\"{}\", crate::helper()); }\n",
            ),
            (
                "b.rs",
                "use crate::A;\npub struct B(A);\npub fn helper() -> u8 { 1 }\n",
            ),
        ]);
        assert_eq!(found, vec![vec!["a.rs".to_owned(), "b.rs".to_owned()]]);
    }

    #[test]
    fn names_taken_through_glob_imports_count() {
        let found = circles_of(&[
            ("lib.rs", "mod a;\n"),
            (
                "a.rs",
                "mod b;\nuse b::*;\npub struct A;\nfn f() -> B { B }\n",
            ),
            ("a/b.rs", "use super::*;\npub struct B(A);\n"),
        ]);
        assert_eq!(found, vec![vec!["a.rs".to_owned(), "a/b.rs".to_owned()]]);
    }

    #[test]
    fn production_ends_at_the_test_module_only() {
        let text = "fn a() {}\nimpl A {\n    #[cfg(test)]\n    fn len() {}\n}\n#[cfg(test)]\nfn helper() {}\nfn b() {}\n#[cfg(test)]\nmod tests {}\n";
        assert_eq!(production_part(text).lines().count(), 8);
        assert_eq!(production_part("fn a() {}\n"), "fn a() {}\n");
    }

    #[test]
    fn test_modules_are_left_out() {
        let found = circles_of(&[
            (
                "lib.rs",
                "mod a;\npub struct Root;\n#[cfg(test)]\nmod tests { use crate::a::f; }\n",
            ),
            ("a.rs", "pub fn f() -> crate::Root { crate::Root }\n"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }
}
