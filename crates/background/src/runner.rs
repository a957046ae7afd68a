//! [`Runner`]: one thread per [`Job`], bounded batches, metrics, clean shutdown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// One kind of due work.
pub trait Job: Send + Sync + 'static {
    /// Its name: in the thread's name, the logs, the metrics' `job` label and [`Liveness`].
    fn name(&self) -> &'static str;

    /// Does at most `batch` items of due work, each claimed in the store so that no other
    /// replica does it too; how many it did.
    ///
    /// # Errors
    /// Why the run failed (logged and counted; the loop goes on after its interval).
    fn run_due(&self, batch: u32) -> Result<u32, String>;

    /// Given, once its loop has started, what wakes the loop from its pause: a job whose work
    /// is announced (rather than found by looking) keeps it and calls it when work arrives.
    fn woken_by(&self, _wake: Wake) {}
}

/// Wakes one job's loop from its pause (a spurious wake-up only runs a batch early).
#[derive(Debug, Clone)]
pub struct Wake(std::thread::Thread);

impl Wake {
    /// Wakes the loop now.
    pub fn wake(&self) {
        self.0.unpark();
    }
}

/// How often a job runs and how much it takes at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// The pause after a batch that was not full (or failed).
    pub interval: Duration,
    /// The most items one run takes: what bounds the work (and the transaction) of a run.
    pub batch: u32,
}

/// Whether a job's loop still runs: a readiness check.
#[derive(Debug, Clone)]
pub struct Liveness {
    name: &'static str,
    alive: Arc<AtomicBool>,
}

impl Liveness {
    /// `Ok` while the loop runs; why not, once it stopped (a panic, or [`Runner::stop`]).
    ///
    /// # Errors
    /// The loop has stopped.
    pub fn check(&self) -> Result<(), String> {
        if self.alive.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(format!("the {} loop has stopped", self.name))
        }
    }
}

/// Marks a loop stopped when its thread ends, whether it returned or panicked.
struct EndsAlive(Arc<AtomicBool>);

impl Drop for EndsAlive {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

#[derive(Debug)]
struct Running {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Runs [`Job`]s, each on a thread of its own, until stopped or dropped.
#[derive(Debug, Default)]
pub struct Runner {
    running: Vec<Running>,
}

impl Runner {
    /// A runner with no jobs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts `job` on `schedule`.
    ///
    /// # Errors
    /// A schedule that would spin (a batch of 0, or no pause between runs); the thread could
    /// not be started.
    pub fn start(&mut self, job: Arc<dyn Job>, schedule: Schedule) -> std::io::Result<Liveness> {
        if schedule.batch == 0 || schedule.interval.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{}: a schedule needs a batch of at least 1 and a pause between runs",
                    job.name()
                ),
            ));
        }
        let name = job.name();
        let stop = Arc::new(AtomicBool::new(false));
        let alive = Arc::new(AtomicBool::new(true));
        let (stopping, ends) = (stop.clone(), EndsAlive(alive.clone()));
        let running = job.clone();
        let thread = std::thread::Builder::new()
            // Linux keeps 15 bytes of a thread's name: the job's own name, without a prefix.
            .name(name.replace(' ', "-"))
            .spawn(move || {
                let _ends = ends;
                run_until_stopped(running.as_ref(), schedule, &stopping);
            })?;
        job.woken_by(Wake(thread.thread().clone()));
        self.running.push(Running {
            stop,
            thread: Some(thread),
        });
        Ok(Liveness { name, alive })
    }

    /// Stops every loop: wakes those waiting, and waits for each to finish the batch in hand.
    pub fn stop(&mut self) {
        for running in &self.running {
            running.stop.store(true, Ordering::Release);
            if let Some(thread) = &running.thread {
                thread.thread().unpark();
            }
        }
        for running in &mut self.running {
            if let Some(thread) = running.thread.take() {
                // A loop that panicked has said so in the log already.
                let _ = thread.join();
            }
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The loop: a batch, again at once while batches are full, else a pause that a stop ends.
fn run_until_stopped(job: &dyn Job, schedule: Schedule, stop: &AtomicBool) {
    let label = job.name().replace(' ', "_");
    let succeeded = metrics::counter!("flagsvc_background_runs_total", "job" => label.clone(), "outcome" => "ok");
    let failed = metrics::counter!("flagsvc_background_runs_total", "job" => label.clone(), "outcome" => "failed");
    let items = metrics::counter!("flagsvc_background_items_total", "job" => label);
    while !stop.load(Ordering::Acquire) {
        let full = match job.run_due(schedule.batch) {
            Ok(done) => {
                succeeded.increment(1);
                items.increment(u64::from(done));
                done >= schedule.batch
            }
            Err(err) => {
                failed.increment(1);
                log::warn!("{}: {err}", job.name());
                false
            }
        };
        if !full && !stop.load(Ordering::Acquire) {
            // Woken early by `Runner::stop`; a spurious wake-up only runs a batch early.
            std::thread::park_timeout(schedule.interval);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;
    use std::sync::Mutex;
    use std::time::Instant;

    use super::*;

    /// Hands out `due` items in batches, and records the batch sizes asked for.
    struct Counting {
        due: AtomicU32,
        asked: Mutex<Vec<u32>>,
    }

    impl Job for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }

        fn run_due(&self, batch: u32) -> Result<u32, String> {
            self.asked.lock().unwrap().push(batch);
            let due = self.due.load(Ordering::SeqCst);
            let done = due.min(batch);
            self.due.store(due - done, Ordering::SeqCst);
            Ok(done)
        }
    }

    fn wait_for(what: impl Fn() -> bool) {
        let until = Instant::now() + Duration::from_secs(10);
        while !what() {
            assert!(Instant::now() < until, "timed out");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn full_batches_run_again_at_once_and_a_stop_ends_the_pause() {
        let job = Arc::new(Counting {
            due: AtomicU32::new(25),
            asked: Mutex::new(Vec::new()),
        });
        let mut runner = Runner::new();
        let schedule = Schedule {
            interval: Duration::from_secs(3600),
            batch: 10,
        };
        let liveness = runner.start(job.clone(), schedule).unwrap();
        // 10, 10, then 5 (not full): then it pauses for an hour, which the stop ends.
        wait_for(|| job.due.load(Ordering::SeqCst) == 0 && job.asked.lock().unwrap().len() == 3);
        liveness.check().unwrap();
        let stopping = Instant::now();
        runner.stop();
        assert!(stopping.elapsed() < Duration::from_secs(60));
        assert_eq!(*job.asked.lock().unwrap(), [10, 10, 10]);
        assert_eq!(
            liveness.check().unwrap_err(),
            "the counting loop has stopped"
        );
    }

    #[test]
    fn a_schedule_that_would_spin_is_refused() {
        let job = Arc::new(Counting {
            due: AtomicU32::new(0),
            asked: Mutex::new(Vec::new()),
        });
        let mut runner = Runner::new();
        for schedule in [
            Schedule {
                interval: Duration::from_secs(1),
                batch: 0,
            },
            Schedule {
                interval: Duration::ZERO,
                batch: 10,
            },
        ] {
            let refused = runner.start(job.clone(), schedule).unwrap_err();
            assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
        }
        assert!(job.asked.lock().unwrap().is_empty());
    }

    struct Failing(AtomicU32);

    impl Job for Failing {
        fn name(&self) -> &'static str {
            "failing"
        }

        fn run_due(&self, _: u32) -> Result<u32, String> {
            if self.0.fetch_add(1, Ordering::SeqCst) == 2 {
                panic!("a bug");
            }
            Err("the store is down".into())
        }
    }

    #[test]
    fn a_failed_run_is_retried_after_the_interval_and_a_panic_shows_in_liveness() {
        let job = Arc::new(Failing(AtomicU32::new(0)));
        let mut runner = Runner::new();
        let schedule = Schedule {
            interval: Duration::from_millis(1),
            batch: 5,
        };
        let liveness = runner.start(job.clone(), schedule).unwrap();
        wait_for(|| liveness.check().is_err());
        assert_eq!(job.0.load(Ordering::SeqCst), 3);
        assert_eq!(
            liveness.check().unwrap_err(),
            "the failing loop has stopped"
        );
        runner.stop();
    }
}
