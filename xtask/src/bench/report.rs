//! The results as Markdown: printed, and written between the markers of `docs/benchmarks.md`.

use std::fmt::Write as _;
use std::time::Duration;

use super::load::Measured;
use super::pgbench::{self, Mode};
use super::store::Store;

pub const BEGIN_MARKER: &str = "<!-- bench:begin -->";
pub const END_MARKER: &str = "<!-- bench:end -->";

/// The goal that issue 11 sets for a case.
#[derive(Debug, Clone, Copy)]
pub enum Goal {
    None,
    /// req/s at least this share of the pgbench reference.
    ShareOfReference(f64),
    /// req/s at least this.
    AtLeast(f64, &'static str),
    /// p99 under 10 ms; at 10k flags also at most 1.5× the p99 of the named 1k case.
    ListLatency {
        compared_with: Option<&'static str>,
    },
    /// PostgreSQL's wall time at most twice SQLite's.
    ContentionWithinTwiceSqlite,
    /// p99 under this many milliseconds.
    P99Under(f64),
}

const LIST_P99_GOAL_MS: f64 = 10.0;
const LIST_GROWTH_GOAL: f64 = 1.5;
const CONTENTION_GOAL: f64 = 2.0;
pub const PEAK_RSS_GOAL_MIB: f64 = 64.0;
pub const START_UP_GOAL: Duration = Duration::from_millis(200);

/// One measured case.
#[derive(Debug)]
pub struct Row {
    pub case: String,
    pub per_second: f64,
    pub requests: u64,
    pub window: Duration,
    pub p50_us: u64,
    pub p99_us: u64,
    pub non_2xx: u64,
    /// The most common non-2xx status, its count and a sample body.
    pub most_common_failure: Option<(u16, u64, String)>,
    pub failure_share: f64,
    pub server_ms: Option<f64>,
    pub postgres_ms: Option<f64>,
    pub load_generator_ms: Option<f64>,
    /// The load generator's CPU as a share of one core over the window.
    pub load_generator_core_share: Option<f64>,
    /// Cores used by other processes of the machine over the window (noise).
    pub other_cores: Option<f64>,
    pub reference: Option<Mode>,
    pub goal: Goal,
}

impl Row {
    pub fn new(
        case: &str,
        measured: &Measured,
        ticks_per_second: f64,
        reference: Option<Mode>,
        goal: Goal,
    ) -> Row {
        let requests = measured.requests.max(1) as f64;
        let ms_per_request =
            |ticks: Option<u64>| ticks.map(|t| t as f64 / ticks_per_second * 1000.0 / requests);
        Row {
            case: case.to_owned(),
            per_second: measured.per_second(),
            requests: measured.requests,
            window: measured.window,
            p50_us: measured.percentile_us(0.50),
            p99_us: measured.percentile_us(0.99),
            non_2xx: measured.failures.count(),
            most_common_failure: measured
                .failures
                .most_common()
                .map(|(status, count, sample)| (status, count, sample.to_owned())),
            failure_share: measured.failure_share(),
            server_ms: ms_per_request(measured.cpu.server),
            postgres_ms: ms_per_request(measured.cpu.postgres),
            load_generator_ms: ms_per_request(measured.cpu.load_generator),
            load_generator_core_share: measured
                .cpu
                .load_generator
                .map(|t| t as f64 / ticks_per_second / measured.window.as_secs_f64().max(1e-9)),
            other_cores: measured
                .cpu
                .others()
                .map(|t| t as f64 / ticks_per_second / measured.window.as_secs_f64().max(1e-9)),
            reference,
            goal,
        }
    }
}

/// pgbench's figures: one run of -S and -N at each point between the stores.
#[derive(Debug, Clone)]
pub struct ReferenceRun {
    pub when: String,
    pub select: pgbench::Outcome,
    pub write: pgbench::Outcome,
}

/// Everything measured on one store.
#[derive(Debug)]
pub struct StoreReport {
    pub store: Store,
    pub rows: Vec<Row>,
    pub peak_rss_kib: Option<u64>,
    pub start_up: Duration,
    /// pgbench's reference: the mean of the runs before and after this store's cases.
    pub reference_select: Option<f64>,
    pub reference_write: Option<f64>,
    /// Facts about the run (seeding, sizes, counts), one line each.
    pub notes: Vec<String>,
}

impl StoreReport {
    fn row(&self, case: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.case == case)
    }

    fn reference(&self, mode: Mode) -> Option<f64> {
        match mode {
            Mode::Select => self.reference_select,
            Mode::Write => self.reference_write,
        }
    }
}

#[derive(Debug)]
pub struct RunDescription {
    pub lines: Vec<String>,
    pub references: Vec<ReferenceRun>,
    /// Issue 35's stream cases, and facts about them.
    pub streams: Vec<StreamRow>,
    pub stream_notes: Vec<String>,
}

/// A stream case (issue 35): figures other than requests per second, and its goal.
#[derive(Debug, Clone)]
pub struct StreamRow {
    pub case: String,
    pub store: &'static str,
    pub measured: String,
    /// What the issue asks and whether this run meets it.
    pub goal: String,
}

/// The stream cases' table and notes.
fn streams(description: &RunDescription) -> String {
    let mut out = String::new();
    if description.streams.is_empty() && description.stream_notes.is_empty() {
        return out;
    }
    out.push_str("\n### SDK streams (issue 35)\n\n");
    if !description.streams.is_empty() {
        out.push_str("| case | store | measured | goal |\n|---|---|---|---|\n");
        for row in &description.streams {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                row.case,
                row.store,
                row.measured.replace('|', "/"),
                row.goal
            );
        }
        out.push('\n');
    }
    for note in &description.stream_notes {
        let _ = writeln!(out, "- {note}");
    }
    out
}

fn ms(us: u64) -> String {
    format!("{:.2} ms", us as f64 / 1000.0)
}

fn optional_ms(value: Option<f64>) -> String {
    value.map_or("n/a".into(), |v| format!("{v:.3}"))
}

fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "missed"
    }
}

/// The goal column: what issue 11 asks and whether this run meets it.
fn goal_text(row: &Row, store: &StoreReport, all: &[StoreReport]) -> String {
    let ratio = row
        .reference
        .and_then(|mode| store.reference(mode))
        .map(|reference| row.per_second / reference);
    match row.goal {
        Goal::None => String::new(),
        Goal::ShareOfReference(share) => {
            let mode = row.reference.map_or("", Mode::flag);
            let text = format!("≥ {:.0} % of {mode}", share * 100.0);
            match ratio {
                Some(ratio) => format!("{text}: {}", met(ratio >= share)),
                None => text,
            }
        }
        Goal::AtLeast(minimum, text) => format!("{text}: {}", met(row.per_second >= minimum)),
        Goal::ListLatency { compared_with } => {
            let p99_ms = row.p99_us as f64 / 1000.0;
            let mut ok = p99_ms < LIST_P99_GOAL_MS;
            let mut text = format!("p99 < {LIST_P99_GOAL_MS:.0} ms");
            if let Some(base) = compared_with.and_then(|case| store.row(case)) {
                let growth = row.p99_us as f64 / base.p99_us.max(1) as f64;
                ok &= growth <= LIST_GROWTH_GOAL;
                let _ = write!(text, ", ≤ {LIST_GROWTH_GOAL}× {} ({growth:.1}×)", base.case);
            }
            format!("{text}: {}", met(ok))
        }
        Goal::P99Under(ms) => {
            let p99_ms = row.p99_us as f64 / 1000.0;
            format!("p99 < {ms:.0} ms: {}", met(p99_ms < ms))
        }
        Goal::ContentionWithinTwiceSqlite => {
            let wall = |report: &StoreReport| report.row(&row.case).map(|r| r.window.as_secs_f64());
            let postgres = all
                .iter()
                .find(|r| r.store == Store::Postgres)
                .and_then(wall);
            let sqlite = all.iter().find(|r| r.store == Store::Sqlite).and_then(wall);
            match (postgres, sqlite) {
                (Some(postgres), Some(sqlite)) => {
                    let ratio = postgres / sqlite.max(1e-9);
                    format!(
                        "PostgreSQL ≤ {CONTENTION_GOAL:.0}× SQLite wall time ({ratio:.2}×): {}",
                        met(ratio <= CONTENTION_GOAL)
                    )
                }
                _ => format!(
                    "PostgreSQL ≤ {CONTENTION_GOAL:.0}× SQLite wall time (needs both stores)"
                ),
            }
        }
    }
}

fn table(store: &StoreReport, all: &[StoreReport]) -> String {
    let mut out = String::new();
    out.push_str(
        "| case | req/s | p50 | p99 | non-2xx | flagsvc CPU ms/req | PostgreSQL CPU ms/req \
         | reference | ratio | goal | load generator CPU ms/req (share of a core) | other processes (cores) |\n",
    );
    out.push_str("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|\n");
    for row in &store.rows {
        let reference = row
            .reference
            .and_then(|mode| Some((mode, store.reference(mode)?)));
        let (reference_text, ratio_text) = match reference {
            Some((mode, tps)) => (
                format!("{} {}", mode.flag(), thousands(tps)),
                format!("{:.1} %", row.per_second / tps * 100.0),
            ),
            None => (String::new(), String::new()),
        };
        let non_2xx = match &row.most_common_failure {
            Some((status, count, _)) => format!("{} ({status} ×{count})", row.non_2xx),
            None => "0".into(),
        };
        let load_generator = match (row.load_generator_ms, row.load_generator_core_share) {
            (Some(ms), Some(share)) => format!("{ms:.3} ({:.0} %)", share * 100.0),
            _ => "n/a".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {non_2xx} | {} | {} | {reference_text} | {ratio_text} | {} | {load_generator} | {} |",
            row.case,
            thousands(row.per_second),
            ms(row.p50_us),
            ms(row.p99_us),
            optional_ms(row.server_ms),
            match store.store {
                Store::Postgres => optional_ms(row.postgres_ms),
                Store::Sqlite => "-".into(),
            },
            goal_text(row, store, all),
            row.other_cores.map_or("n/a".into(), |c| format!("{c:.2}")),
        );
    }
    out
}

/// The generated region: what was run, where, and what came out.
pub fn render(description: &RunDescription, stores: &[StoreReport]) -> String {
    let mut out = String::new();
    out.push_str("## Latest run\n\n");
    for line in &description.lines {
        let _ = writeln!(out, "- {line}");
    }
    if !description.references.is_empty() {
        out.push_str("\npgbench on the same cluster (TPS without initial connection time; PostgreSQL CPU per transaction over the run):\n\n");
        out.push_str(
            "| when | -S TPS | -S PostgreSQL CPU ms/tx | -N TPS | -N PostgreSQL CPU ms/tx |\n",
        );
        out.push_str("|---|--:|--:|--:|--:|\n");
        for run in &description.references {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                run.when,
                thousands(run.select.tps),
                optional_ms(run.select.postgres_ms_per_transaction),
                thousands(run.write.tps),
                optional_ms(run.write.postgres_ms_per_transaction),
            );
        }
    }
    for store in stores {
        let _ = writeln!(out, "\n### {}\n", store.store.name());
        match (store.reference_select, store.reference_write) {
            (Some(select), Some(write)) => {
                let _ = writeln!(
                    out,
                    "Reference: pgbench -S {} TPS and -N {} TPS (mean of the runs before and after these cases).\n",
                    thousands(select),
                    thousands(write)
                );
            }
            _ => out.push_str("No pgbench reference in this run.\n\n"),
        }
        out.push_str(&table(store, stores));
        out.push('\n');
        if let Some(kib) = store.peak_rss_kib {
            let mib = kib as f64 / 1024.0;
            let _ = writeln!(
                out,
                "- Peak RSS of flagsvc (VmHWM) at the end: {mib:.1} MiB (goal < {PEAK_RSS_GOAL_MIB:.0} MiB: {})",
                met(mib < PEAK_RSS_GOAL_MIB)
            );
        }
        let start_up_ms = store.start_up.as_secs_f64() * 1000.0;
        match store.store {
            Store::Sqlite => {
                let _ = writeln!(
                    out,
                    "- Start-up on a fresh SQLite file, spawn to first answered `GET /api/v2`: {start_up_ms:.0} ms (goal < {} ms: {})",
                    START_UP_GOAL.as_millis(),
                    met(store.start_up < START_UP_GOAL)
                );
            }
            Store::Postgres => {
                let _ = writeln!(
                    out,
                    "- Start-up on a fresh database (migrations included), spawn to first answered `GET /api/v2`: {start_up_ms:.0} ms"
                );
            }
        }
        for note in &store.notes {
            let _ = writeln!(out, "- {note}");
        }
        let failing: Vec<&Row> = store.rows.iter().filter(|r| r.non_2xx > 0).collect();
        for row in failing {
            if let Some((status, count, sample)) = &row.most_common_failure {
                let _ = writeln!(
                    out,
                    "- {}: {} of {} responses not 2xx; most common {status} (×{count}): `{}`",
                    row.case,
                    row.non_2xx,
                    row.requests,
                    sample.replace('`', "'")
                );
            }
        }
    }
    out.push_str(&streams(description));
    out
}

/// Replaces what lies between the markers of `text` with `region`.
pub fn replace_region(text: &str, region: &str) -> Option<String> {
    let begin = text.find(BEGIN_MARKER)? + BEGIN_MARKER.len();
    let end = begin + text[begin..].find(END_MARKER)?;
    Some(format!(
        "{}\n{}\n{}",
        &text[..begin],
        region.trim_end(),
        &text[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_only_the_region() {
        let text = "intro\n<!-- bench:begin -->\nold\n<!-- bench:end -->\nhistory\n";
        assert_eq!(
            replace_region(text, "new\n").as_deref(),
            Some("intro\n<!-- bench:begin -->\nnew\n<!-- bench:end -->\nhistory\n")
        );
        assert_eq!(replace_region("no markers", "new"), None);
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.0), "1,000");
    }
}
