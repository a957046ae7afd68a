//! How long [`domain::policy::decide`] takes for a caller with 50 roles of 20 statements each,
//! and for one whose 50 roles are as large and as glob-heavy as roles may be; how long the
//! `_access` of a flag (every flag action, [`domain::policy::decide_each`]) takes for both:
//! `cargo bench -p flagsvc-domain --bench decide` (run by `cargo xtask bench`, which puts the
//! figures in docs/benchmarks.md). A measurement, not a test: nothing here fails on time.

use std::hint::black_box;
use std::time::Instant;

use domain::policy::actions::{of_kind, ResourceKind};
use domain::policy::{
    decide, decide_each, decide_in_environments, Policy, Resource, Statement, MAX_NAME_GLOBS,
};

/// 50 roles × 20 statements, shaped like a real organisation's: per-project, per-environment
/// and tagged specifiers, action globs, some denies; none of them about project `shop`'s flag
/// `checkout` except, where `matching`, the last statement of the last role.
fn policies(matching: bool) -> Vec<Policy> {
    (0..50)
        .map(|r| {
            let mut statements = (0..20)
                .map(|s| {
                    let project = format!("team{r}-project{s}");
                    match s % 4 {
                        0 => Statement::allow(
                            &[&format!("proj/{project}:env/*:flag/*")],
                            &["update*"],
                        ),
                        1 => Statement::deny(
                            &[&format!("proj/{project}:env/production:flag/*;critical")],
                            &["*"],
                        ),
                        2 => Statement::allow(
                            &[
                                &format!("proj/{project}:env/staging:segment/*"),
                                &format!("proj/{project}-*:env/test*:flag/beta-*"),
                            ],
                            &["updateOn", "updateRules", "updateTargets"],
                        ),
                        _ => Statement::allow(&[&format!("proj/{project}")], &["viewProject"]),
                    }
                })
                .collect::<Vec<_>>();
            if matching && r == 49 {
                if let Some(last) = statements.last_mut() {
                    *last = Statement::allow(
                        &["proj/shop:env/production:flag/*;checkout"],
                        &["updateOn"],
                    );
                }
            }
            Policy::new(format!("role-{r}"), statements)
        })
        .collect()
}

/// 50 roles as large as a role may be (32 KiB: 50 statements of 8 specifiers), every
/// specifier's names holding the most globs a name may ([`MAX_NAME_GLOBS`]), shaped to match
/// project `shop`'s environment `production` and fail only at the flag name's last piece: the
/// most matching work a caller's roles can ask for per decision.
fn glob_heavy_policies() -> Vec<Policy> {
    let globs = |letters: &str| -> String {
        let mut name: String = letters
            .chars()
            .take(MAX_NAME_GLOBS)
            .flat_map(|c| ['*', c])
            .collect();
        name.truncate(2 * MAX_NAME_GLOBS);
        name
    };
    let specifier = format!(
        "proj/{}:env/{}:flag/{}x",
        globs("shop"),
        globs("production"),
        globs("checkout")
    );
    assert!(
        domain::policy::check_specifier(&specifier).is_ok(),
        "{specifier}"
    );
    (0..50)
        .map(|r| {
            let statements = (0..50)
                .map(|_| {
                    let specifiers = vec![specifier.as_str(); 8];
                    Statement::allow(&specifiers, &["update*", "createFlag"])
                })
                .collect();
            Policy::new(format!("glob-role-{r}"), statements)
        })
        .collect()
}

/// The median time of `work`, in microseconds, over `batches` batches of `per_batch`.
fn median_micros(batches: usize, per_batch: u32, mut work: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..batches)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..per_batch {
                work();
            }
            start.elapsed().as_secs_f64() * 1e6 / f64::from(per_batch)
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Prints the median time of one decision of `updateOn`, and of the `_access` of the flag.
fn measure(what: &str, policies: &[Policy], resource: &Resource, per_batch: u32) {
    let micros = median_micros(31, per_batch, || {
        black_box(decide(
            black_box(policies),
            black_box("updateOn"),
            black_box(resource),
        ));
    });
    println!("decide: {what}: {micros:.1} µs per decision (median of 31 batches of {per_batch})");
    let actions: Vec<&str> = of_kind(ResourceKind::Flag).map(|a| a.name).collect();
    let micros = median_micros(31, per_batch / 4, || {
        black_box(decide_each(
            black_box(policies),
            black_box(&actions),
            black_box(resource),
        ));
    });
    println!(
        "decide: {what}, the flag's _access ({} actions): {micros:.1} µs (median of 31 batches of {})",
        actions.len(),
        per_batch / 4
    );
    // A change to what every environment shares, in a project of 100 environments: `env/*`
    // and each environment.
    let (everywhere, _) = resource
        .split_environment()
        .unwrap_or((resource.clone(), ""));
    let names: Vec<String> = (0..100).map(|i| format!("env-{i:03}")).collect();
    let environments: Vec<&str> = std::iter::once("*")
        .chain(names.iter().map(String::as_str))
        .collect();
    let micros = median_micros(31, per_batch / 4, || {
        black_box(decide_in_environments(
            black_box(policies),
            black_box("updateName"),
            black_box(&everywhere),
            black_box(&environments),
        ));
    });
    println!(
        "decide: {what}, a flag-wide change in 100 environments (updateName on env/* and each): {micros:.1} µs (median of 31 batches of {})",
        per_batch / 4
    );
}

fn main() {
    let resource = Resource::project("shop")
        .environment("production")
        .flag("checkout")
        .with_tags(&["checkout".to_owned(), "payments".to_owned()]);
    for (what, matching) in [
        ("no statement matches (every one read)", false),
        ("the last statement allows", true),
    ] {
        let policies = policies(matching);
        let allowed = decide(&policies, "updateOn", &resource).is_allowed();
        assert_eq!(
            allowed, matching,
            "the benchmark's policies decide as intended"
        );
        measure(
            &format!("50 roles x 20 statements, {what}"),
            &policies,
            &resource,
            2_000,
        );
    }
    let heavy = glob_heavy_policies();
    assert!(!decide(&heavy, "updateOn", &resource).is_allowed());
    measure(
        &format!(
            "50 roles x 50 statements x 8 specifiers, {MAX_NAME_GLOBS} globs in every name, none matching"
        ),
        &heavy,
        &resource,
        20,
    );
}
