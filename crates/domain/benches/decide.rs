//! How long [`domain::policy::decide`] takes for a caller with 50 roles of 20 statements each:
//! `cargo bench -p flagsvc-domain --bench decide` (run by `cargo xtask bench`, which puts the
//! figures in docs/benchmarks.md). A measurement, not a test: nothing here fails on time.

use std::hint::black_box;
use std::time::Instant;

use domain::policy::{decide, Policy, Resource, Statement};

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

/// The median time of one decision, in microseconds, over `batches` batches of `per_batch`.
fn median_micros(policies: &[Policy], resource: &Resource, batches: usize, per_batch: u32) -> f64 {
    let mut times: Vec<f64> = (0..batches)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..per_batch {
                black_box(decide(
                    black_box(policies),
                    black_box("updateOn"),
                    black_box(resource),
                ));
            }
            start.elapsed().as_secs_f64() * 1e6 / f64::from(per_batch)
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
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
        let micros = median_micros(&policies, &resource, 31, 2_000);
        println!("decide: 50 roles x 20 statements, {what}: {micros:.1} µs per decision (median of 31 batches of 2000)");
    }
}
