use std::path::PathBuf;
use std::sync::Arc;

use actix_http::Request;
use actix_web::body::MessageBody;
use actix_web::dev::{Service as ActixService, ServiceResponse};
use actix_web::http::header::HeaderMap;
use actix_web::http::Method;
use actix_web::test::{self, TestRequest};
use adapter_http::{AppState, HttpConfig};
use adapter_postgres::TestDatabase;
use ports::Store;
use serde_json::{json, Value};
use service::{Service, SystemClock};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
    /// `adapter_memory::MemoryStore`: for the storage port's contract (the HTTP tests run on the
    /// SQL engines).
    Memory,
}

/// A store with a database of its own, removed when dropped.
pub struct Db {
    pub store: Arc<dyn Store>,
    _guard: Guard,
}

enum Guard {
    Sqlite(PathBuf),
    Postgres(TestDatabase),
    /// Nothing to remove: the data goes with the store.
    Memory,
}

impl Db {
    /// Takes the database away under the running store (PostgreSQL only): its connections are
    /// closed and new ones fail, as in an outage.
    pub fn take_down(&self) {
        match &self._guard {
            Guard::Postgres(db) => db.drop_now().expect("drop the test database"),
            Guard::Sqlite(_) | Guard::Memory => panic!("an outage is simulated on PostgreSQL only"),
        }
    }

    /// Has the server refuse connections to the database and close those it has (PostgreSQL
    /// only): an outage the database comes back from with [`Db::allow_connections`].
    pub fn refuse_connections(&self) {
        self.alter_connections(
            "ALLOW_CONNECTIONS false; SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{name}' AND pid <> pg_backend_pid()",
        );
    }

    /// Lets connections to the database be made again after [`Db::refuse_connections`].
    pub fn allow_connections(&self) {
        self.alter_connections("ALLOW_CONNECTIONS true");
    }

    /// `ALTER DATABASE <this one> <what>`, from a connection to the server's own database.
    fn alter_connections(&self, what: &str) {
        use diesel::connection::SimpleConnection;
        use diesel::Connection;
        let Guard::Postgres(db) = &self._guard else {
            panic!("connections are refused on PostgreSQL only")
        };
        let name = db
            .url()
            .split('?')
            .next()
            .and_then(|base| base.rsplit('/').next())
            .expect("a database name in the URL");
        let mut admin =
            diesel::PgConnection::establish(&postgres_server_url()).expect("connect to the server");
        let what = what.replace("{name}", name);
        admin
            .batch_execute(&format!("ALTER DATABASE \"{name}\" {what}"))
            .expect("alter the database's connections");
    }

    /// Closes every other connection to the database from the server side (PostgreSQL only), as
    /// a server restart or a proxy's idle timeout does; the database itself stays.
    pub fn cut_connections(&self) {
        match &self._guard {
            Guard::Postgres(_) => self.execute_sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
            ),
            Guard::Sqlite(_) | Guard::Memory => panic!("connections are cut on PostgreSQL only"),
        }
    }

    /// The rows of `table`, counted straight on the database, past the store.
    pub fn count_rows(&self, table: &str) -> i64 {
        use diesel::{Connection, RunQueryDsl};
        #[derive(diesel::QueryableByName)]
        struct Count {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let sql = format!("SELECT COUNT(*) AS n FROM {table}");
        let counted: Count = match &self._guard {
            Guard::Sqlite(path) => {
                let mut conn = diesel::SqliteConnection::establish(&path.display().to_string())
                    .expect("connect to the test database");
                diesel::sql_query(sql).get_result(&mut conn)
            }
            Guard::Postgres(db) => {
                let mut conn = diesel::PgConnection::establish(db.url())
                    .expect("connect to the test database");
                diesel::sql_query(sql).get_result(&mut conn)
            }
            Guard::Memory => panic!("the in-memory store has no tables to count"),
        }
        .expect("count rows");
        counted.n
    }

    /// A connection of its own to the database, past the store (PostgreSQL only): to hold locks
    /// while the store works.
    pub fn pg_connection(&self) -> diesel::PgConnection {
        use diesel::Connection;
        match &self._guard {
            Guard::Postgres(db) => {
                diesel::PgConnection::establish(db.url()).expect("connect to the test database")
            }
            Guard::Sqlite(_) | Guard::Memory => {
                panic!("a PostgreSQL connection on PostgreSQL only")
            }
        }
    }

    /// Runs SQL straight on the database, past the store (e.g. to write rows in an older format).
    pub fn execute_sql(&self, sql: &str) {
        use diesel::connection::SimpleConnection;
        use diesel::Connection;
        match &self._guard {
            Guard::Sqlite(path) => diesel::SqliteConnection::establish(&path.display().to_string())
                .expect("connect to the test database")
                .batch_execute(sql),
            Guard::Postgres(db) => diesel::PgConnection::establish(db.url())
                .expect("connect to the test database")
                .batch_execute(sql),
            Guard::Memory => panic!("the in-memory store runs no SQL"),
        }
        .expect("run SQL");
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Guard::Sqlite(path) = self {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}

pub fn postgres_server_url() -> String {
    std::env::var("FLAGSVC_TEST_POSTGRES_URL")
        .ok()
        .or_else(|| {
            std::env::var("DATABASE_URL")
                .ok()
                .filter(|u| u.starts_with("postgres"))
        })
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

pub fn open(backend: Backend) -> Db {
    match backend {
        Backend::Sqlite => {
            let path = std::env::temp_dir()
                .join(format!("flagsvc-test-{:016x}.db", rand::random::<u64>()));
            let store = adapter_sqlite::open(&path.display().to_string(), 4).expect("open SQLite");
            Db {
                store: Arc::new(store),
                _guard: Guard::Sqlite(path),
            }
        }
        Backend::Postgres => {
            let db = TestDatabase::create(&postgres_server_url()).unwrap_or_else(|e| {
                panic!("these tests need PostgreSQL ({e}); run them with `cargo xtask test`, which finds or starts one")
            });
            let store =
                adapter_postgres::connect(db.url(), 4).expect("connect to the test database");
            Db {
                store: Arc::new(store),
                _guard: Guard::Postgres(db),
            }
        }
        Backend::Memory => Db {
            store: Arc::new(adapter_memory::MemoryStore::new()),
            _guard: Guard::Memory,
        },
    }
}

pub const OWNER: &str = "owner-token-for-tests";

/// A service over `db`'s store (no read cache), with the owner bootstrapped with [`OWNER`].
pub fn bootstrapped(db: &Db) -> Arc<Service> {
    let service = Arc::new(Service::new(
        db.store.clone(),
        Arc::new(SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    ));
    service
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .unwrap();
    service
}

pub struct TestApp<S> {
    pub app: S,
    /// Kept for the test's lifetime: dropping it removes the database.
    pub db: Db,
}

pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Resp {
    /// Asserts the JSON error shape: status, code, a message and the request id.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "body: {}", self.body);
        assert_eq!(self.body["code"], code, "body: {}", self.body);
        assert!(
            self.body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "body: {}",
            self.body
        );
        let id = self
            .headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .expect("x-request-id header");
        assert_eq!(self.body["id"], id);
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub async fn spawn(
    backend: Backend,
) -> TestApp<
    impl ActixService<Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>,
> {
    spawn_with(
        backend,
        HttpConfig {
            rate_limit: 0,
            body_limit: 1024 * 1024,
            ..HttpConfig::default()
        },
    )
    .await
}

pub async fn spawn_with(
    backend: Backend,
    config: HttpConfig,
) -> TestApp<
    impl ActixService<Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>,
> {
    let db = open(backend);
    // The metrics recorder the binary has (one per process: every test app counts into it).
    adapter_http::install_metrics().expect("metrics recorder");
    // With the read cache the binary has: every test that reads what it wrote checks it.
    let service = Arc::new(
        Service::new(
            db.store.clone(),
            Arc::new(SystemClock::default()),
            Arc::new(adapter_http::ApiRepresentations),
        )
        .with_read_cache(16 << 20),
    );
    service
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .expect("bootstrap");
    let state = AppState::new(service.clone(), config).expect("OpenAPI document");
    // With the SDK routes beside the API, as the binary serves them by default.
    let sdk = adapter_sdk::SdkRoutes::new(service, Arc::new(app::SdkGate(state.clone())));
    let mount = adapter_http::Mount::new(move |routes| sdk.configure(routes));
    let app = test::init_service(adapter_http::app_with(state, Some(mount))).await;
    TestApp { app, db }
}

/// One replica's app on `store`, which other replicas share (its own service, caches and
/// limits), with the owner's token [`OWNER`].
pub async fn replica(
    store: Arc<dyn Store>,
    config: HttpConfig,
) -> impl ActixService<Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>
{
    let service = Arc::new(Service::new(
        store,
        Arc::new(SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    ));
    service
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .expect("bootstrap");
    test::init_service(adapter_http::app(
        AppState::new(service, config).expect("OpenAPI document"),
    ))
    .await
}

/// Sends `req` to `app` and reads the answer.
pub async fn send<S, B>(app: &S, req: TestRequest) -> Resp
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = test::call_service(app, req.to_request()).await;
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let bytes = test::read_body(res).await;
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("not JSON ({status}): {bytes:?}"))
    };
    Resp {
        status,
        headers,
        body,
    }
}

/// A request to `path`, with `token` as `Authorization` when given.
pub fn request(method: Method, path: &str, token: Option<&str>) -> TestRequest {
    let req = TestRequest::default().method(method).uri(path);
    match token {
        Some(token) => req.insert_header(("Authorization", token.to_owned())),
        None => req,
    }
}

pub const SEMANTIC: &str = "application/json; domain-model=svc.semanticpatch";

impl<S, B> TestApp<S>
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    pub async fn send(&self, req: TestRequest) -> Resp {
        send(&self.app, req).await
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.get_as(OWNER, path).await
    }

    pub async fn get_as(&self, token: &str, path: &str) -> Resp {
        self.send(request(Method::GET, path, Some(token))).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.post_as(OWNER, path, body).await
    }

    pub async fn post_as(&self, token: &str, path: &str, body: Value) -> Resp {
        self.send(request(Method::POST, path, Some(token)).set_json(body))
            .await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Resp {
        self.patch_as(OWNER, path, body).await
    }

    pub async fn patch_as(&self, token: &str, path: &str, body: Value) -> Resp {
        self.send(request(Method::PATCH, path, Some(token)).set_json(body))
            .await
    }

    pub async fn patch_with(&self, path: &str, content_type: &str, body: Value) -> Resp {
        self.send(
            request(Method::PATCH, path, Some(OWNER))
                .insert_header(("Content-Type", content_type.to_owned()))
                .set_payload(body.to_string()),
        )
        .await
    }

    pub async fn delete(&self, path: &str) -> Resp {
        self.delete_as(OWNER, path).await
    }

    pub async fn delete_as(&self, token: &str, path: &str) -> Resp {
        self.send(request(Method::DELETE, path, Some(token))).await
    }

    /// A new access token with `role`, made by the owner.
    pub async fn token(&self, role: &str) -> String {
        let created = self
            .post("/api/v2/tokens", json!({"name": role, "role": role}))
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
        created.body["token"].as_str().unwrap().to_owned()
    }

    /// A personal token of member `member_id` with `role`, written straight to the store (the API
    /// only makes tokens for the calling member).
    pub fn token_of_member(&self, member_id: &str, role: domain::role::Role) -> String {
        use ports::StoreExt;
        use sha2::Digest;
        let secret = format!("api-{}", uuid::Uuid::new_v4());
        let token = domain::token::Token {
            id: domain::id::TokenId::generate(&mut service::RandomIds),
            member_id: domain::id::MemberId::parse(member_id).unwrap(),
            name: "test".into(),
            description: String::new(),
            role,
            service_token: false,
            default_api_version: 20240415,
            creation_date: 1,
            last_modified: 1,
            last_used: None,
            ending: secret[secret.len() - 4..].to_owned(),
            custom_role_ids: Vec::new(),
            inline_role: Vec::new(),
        };
        let hash = hex::encode(sha2::Sha256::digest(secret.as_bytes()));
        self.db
            .store
            .write_tx(|repo| repo.insert_token(&token, &hash))
            .unwrap();
        secret
    }

    /// Invites a member with `role` and returns its `_id`.
    pub async fn member(&self, email: &str, role: &str) -> String {
        let invited = self
            .post("/api/v2/members", json!([{"email": email, "role": role}]))
            .await;
        assert_eq!(invited.status, 201, "{}", invited.body);
        invited.body["items"][0]["_id"].as_str().unwrap().to_owned()
    }

    /// Creates project `key` (with `test` and `production`).
    pub async fn project(&self, key: &str) -> Value {
        let created = self
            .post("/api/v2/projects", json!({"key": key, "name": key}))
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
        created.body
    }

    /// Creates boolean flag `key` in `project`.
    pub async fn flag(&self, project: &str, key: &str) -> Value {
        let created = self
            .post(
                &format!("/api/v2/flags/{project}"),
                json!({"key": key, "name": key}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
        created.body
    }
}
