//! Other replicas' commits, heard on PostgreSQL.
//!
//! A write transaction that announces a change sends a `NOTIFY` on [`CHANGES_CHANNEL`] in the
//! same transaction (so it is delivered when, and only if, the transaction commits). Each
//! subscribed process keeps one connection of its own that `LISTEN`s on that channel, in a thread
//! of its own:
//!
//! - every [`POLL`] it reads what arrived (a non-blocking read of the socket) and tells the
//!   listener;
//! - every [`HEARTBEAT`] it sends `SELECT 1` first: PostgreSQL delivers every notification of a
//!   transaction that committed before that statement started ahead of its answer, so once the
//!   answer and the notifications before it are read, the listener is told it has caught up to
//!   the moment the statement was sent ([`ChangeListener::caught_up`]);
//! - when the connection fails (or before it is made) the listener is told
//!   [`ChangeListener::lost`], and the thread connects again; after a new `LISTEN` takes effect it
//!   is told `lost` once more, since what committed before that was never heard.
//!
//! The thread ends once the listener is dropped.

use std::sync::Weak;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use ports::{ChangeListener, Changed};

use crate::CHANGES_CHANNEL;

/// How often arrived notifications are read.
pub const POLL: Duration = Duration::from_millis(2);

/// How often the connection is proven alive and caught up (see the module's documentation).
pub const HEARTBEAT: Duration = Duration::from_millis(20);

/// The first wait before connecting again; it doubles up to [`RECONNECT_MAX`].
const RECONNECT: Duration = Duration::from_millis(50);

/// The longest wait before connecting again.
const RECONNECT_MAX: Duration = Duration::from_secs(2);

/// Starts the thread that tells `listener` of the commits announced on the database at `url`
/// (see the module's documentation). If no thread can be started, the listener is told `lost`
/// and never `caught_up`.
pub fn start(url: String, listener: Weak<dyn ChangeListener>) {
    let for_thread = listener.clone();
    let spawned = std::thread::Builder::new()
        .name("flagsvc-change-feed".into())
        .spawn(move || follow_forever(&url, &for_thread));
    if let Err(err) = spawned {
        log::error!("cannot start the change feed thread: {err}");
        if let Some(listener) = listener.upgrade() {
            listener.lost();
        }
    }
}

fn follow_forever(url: &str, listener: &Weak<dyn ChangeListener>) {
    let mut wait = RECONNECT;
    loop {
        match listener.upgrade() {
            Some(listener) => listener.lost(),
            None => return,
        }
        match listen(url) {
            Ok(conn) => {
                wait = RECONNECT;
                if let Err(err) = follow(conn, listener) {
                    log::warn!("the change feed's connection failed ({err}); connecting again");
                }
            }
            Err(err) => log::warn!("the change feed cannot connect ({err}); trying again"),
        }
        if listener.strong_count() == 0 {
            return;
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(RECONNECT_MAX);
    }
}

/// A connection listening on [`CHANGES_CHANNEL`].
fn listen(url: &str) -> Result<PgConnection, String> {
    let mut conn = PgConnection::establish(url).map_err(|e| e.to_string())?;
    conn.batch_execute(&format!(
        "SET application_name = 'flagsvc change feed'; LISTEN {CHANGES_CHANNEL}"
    ))
    .map_err(|e| e.to_string())?;
    Ok(conn)
}

/// Tells `listener` what arrives on `conn` until the connection fails (`Err`) or the listener is
/// dropped (`Ok`).
fn follow(
    mut conn: PgConnection,
    listener: &Weak<dyn ChangeListener>,
) -> Result<(), diesel::result::Error> {
    // Listening from now on: what committed before was not heard.
    match listener.upgrade() {
        Some(listener) => listener.lost(),
        None => return Ok(()),
    }
    let mut last_beat: Option<Instant> = None;
    loop {
        let Some(listener) = listener.upgrade() else {
            return Ok(());
        };
        let beat = last_beat.is_none_or(|at| at.elapsed() >= HEARTBEAT);
        let sent = Instant::now();
        if beat {
            conn.batch_execute("SELECT 1")?;
        }
        for notification in conn.notifications_iter() {
            let notification = notification?;
            // Text this release never sends (a newer one's, say): forget everything.
            let changed =
                Changed::from_payload(&notification.payload).unwrap_or(Changed::Everything);
            listener.changed(&changed);
        }
        if beat {
            listener.caught_up(sent);
            last_beat = Some(sent);
        }
        drop(listener);
        std::thread::sleep(POLL);
    }
}
