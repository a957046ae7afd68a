//! Other replicas' commits, heard on PostgreSQL.
//!
//! A write transaction that announces a change sends a `NOTIFY` on [`CHANGES_CHANNEL`] in the
//! same transaction (so it is delivered when, and only if, the transaction commits). Each
//! subscribed process keeps one connection of its own that `LISTEN`s on that channel, in a thread
//! of its own:
//!
//! - every [`POLL`] it reads what arrived (a non-blocking read of the socket) and tells the
//!   listener;
//! - every [`HEARTBEAT`] it sends a statement first: PostgreSQL (checked on 15) delivers every
//!   notification of a transaction that committed before that statement started ahead of its
//!   answer, so once the answer and the notifications before it are read, the listener is told
//!   it has caught up to the moment the statement was sent ([`ChangeListener::caught_up`]). The
//!   statement also proves that the session answering is the one that listens, and still does:
//!   a connection pooler in transaction mode between would pass it to another session, and the
//!   feed then never catches up (a direct, session-long connection is needed);
//! - when the connection fails, the listener is told [`ChangeListener::lost`] at once, and the
//!   thread connects again (TCP keepalives find a silent connection dead in seconds); after a new
//!   `LISTEN` takes effect it is told `lost` once more, since what committed before that was
//!   never heard.
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
    let url = with_keepalives(url);
    let mut wait = RECONNECT;
    loop {
        match listen(&url) {
            Ok(listening) => {
                wait = RECONNECT;
                if let Err(err) = follow(listening, listener) {
                    log::warn!("the change feed's connection failed ({err}); connecting again");
                }
            }
            Err(err) => log::warn!("the change feed cannot connect ({err}); trying again"),
        }
        // At once, not after the wait: nothing may be kept while changes go unheard.
        match listener.upgrade() {
            Some(listener) => listener.lost(),
            None => return,
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(RECONNECT_MAX);
    }
}

/// `url` with TCP keepalives and a send timeout (unless it sets them): a connection that went
/// silent (a half-open one) is found dead in seconds, not when the kernel gives up. Neither
/// ends a slow statement: keepalives probe an idle connection, and the send timeout counts only
/// data the server's host has not acknowledged.
///
/// ```
/// let url = adapter_sql::feed::with_keepalives("postgres://h/db?tcp_user_timeout=5");
/// assert_eq!(
///     url,
///     "postgres://h/db?tcp_user_timeout=5&keepalives_idle=5&keepalives_interval=2&keepalives_count=3"
/// );
/// ```
pub fn with_keepalives(url: &str) -> String {
    let mut url = url.to_owned();
    for (name, value) in [
        ("keepalives_idle", "5"),
        ("keepalives_interval", "2"),
        ("keepalives_count", "3"),
        ("tcp_user_timeout", "10000"),
    ] {
        if !url.contains(&format!("{name}=")) {
            let separator = if url.contains('?') { '&' } else { '?' };
            url = format!("{url}{separator}{name}={value}");
        }
    }
    url
}

/// A connection listening on [`CHANGES_CHANNEL`], and the server process that listens.
struct Listening {
    conn: PgConnection,
    pid: i32,
}

/// What the heartbeat reads: which server process answered, and whether it listens.
#[derive(diesel::QueryableByName)]
struct Beat {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pid: i32,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    listening: bool,
}

/// Proves the listening session is the one that answers (a pooler in between would hand the
/// statement to another one, which hears nothing) and that it still listens.
const HEARTBEAT_SQL: &str = concat!(
    "SELECT pg_backend_pid() AS pid, '",
    crate::repository::changes_channel!(),
    "' = ANY(ARRAY(SELECT pg_listening_channels())) AS listening"
);

fn heartbeat(conn: &mut PgConnection) -> Result<Beat, diesel::result::Error> {
    use diesel::RunQueryDsl;
    diesel::sql_query(HEARTBEAT_SQL).get_result(conn)
}

fn listen(url: &str) -> Result<Listening, String> {
    let mut conn = PgConnection::establish(url).map_err(|e| e.to_string())?;
    conn.batch_execute(&format!(
        "SET application_name = 'flagsvc change feed'; LISTEN {CHANGES_CHANNEL}"
    ))
    .map_err(|e| e.to_string())?;
    let beat = heartbeat(&mut conn).map_err(|e| e.to_string())?;
    if !beat.listening {
        return Err("the session does not listen after LISTEN (a pooler in between?)".into());
    }
    Ok(Listening {
        conn,
        pid: beat.pid,
    })
}

/// Tells `listener` what arrives on `conn` until the connection fails (`Err`) or the listener is
/// dropped (`Ok`).
fn follow(
    listening: Listening,
    listener: &Weak<dyn ChangeListener>,
) -> Result<(), diesel::result::Error> {
    let Listening { mut conn, pid } = listening;
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
            let answered = heartbeat(&mut conn)?;
            if answered.pid != pid || !answered.listening {
                return Err(diesel::result::Error::QueryBuilderError(
                    "another session answered the heartbeat, or it no longer listens".into(),
                ));
            }
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
