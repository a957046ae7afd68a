//! The web console end to end, in headless Chromium driven over WebDriver (`fantoccini` and
//! Debian's `chromium` and `chromium-driver`; `.ci/run` installs them), against the `flagsvc`
//! binary on SQLite and on PostgreSQL: sign in, find a flag, toggle it (and see the API report
//! it), see it in the flag's history, edit its settings, read a segment, create a token (its
//! secret shown once), lose to a concurrent change on a stale page, sign out, and a reader who
//! cannot toggle. Screenshots of the main pages go to
//! `target/console-screenshots/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

const OWNER: &str = "owner-token-for-the-console";
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// How long the browser waits for an element or a page.
const WAIT: Duration = Duration::from_secs(20);

fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A child process, killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until something accepts connections at `address`.
fn wait_for_port(address: &str, what: &str) {
    let start = Instant::now();
    while TcpStream::connect(address).is_err() {
        assert!(start.elapsed() < WAIT, "{what} did not start at {address}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The binary serving `database_url` at a free address.
fn start_server(database_url: &str) -> (Process, String) {
    let address = free_address();
    let child = Command::new(env!("CARGO_BIN_EXE_flagsvc"))
        .args([
            "--database-url",
            database_url,
            "--bind",
            &address,
            "--bootstrap-token",
            OWNER,
            "--rate-limit",
            "0",
        ])
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let process = Process(child);
    wait_for_port(&address, "flagsvc");
    (process, address)
}

/// One API request with `token`: status and JSON body.
fn api(address: &str, method: &str, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let (content_type, body) = match body {
        Some(Value::String(semantic)) => {
            ("application/json; domain-model=svc.semanticpatch", semantic)
        }
        Some(body) => ("application/json", body.to_string()),
        None => ("application/json", String::new()),
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nAuthorization: {token}\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    // The body is sent whole (Content-Length) or chunked; a JSON answer is one chunk.
    let json = body
        .find('{')
        .and_then(|start| body.rfind('}').map(|end| &body[start..=end]))
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null);
    (status, json)
}

/// Project `shop` (production, critical; test) with flags `dark-mode` and `checkout`, and a
/// reader's token, returned.
fn seed(address: &str) -> String {
    let (status, body) = api(
        address,
        "POST",
        "/api/v2/projects",
        OWNER,
        Some(json!({
            "key": "shop", "name": "Shop",
            "environments": [
                {"key": "production", "name": "Production", "color": "D62D20", "critical": true},
                {"key": "test", "name": "Test", "color": "2E8B57"}
            ]
        })),
    );
    assert_eq!(status, 201, "{body}");
    for (key, name, tags) in [
        ("dark-mode", "Dark mode", json!(["ui"])),
        ("checkout", "New checkout", json!(["payments"])),
        ("search-v2", "Search v2", json!(["search", "ui"])),
    ] {
        let (status, body) = api(
            address,
            "POST",
            "/api/v2/flags/shop",
            OWNER,
            Some(json!({"key": key, "name": name, "tags": tags, "temporary": true})),
        );
        assert_eq!(status, 201, "{body}");
    }
    let (status, body) = api(
        address,
        "POST",
        "/api/v2/segments/shop/production",
        OWNER,
        Some(json!({"key": "beta", "name": "Beta testers", "tags": ["qa"]})),
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = api(
        address,
        "PATCH",
        "/api/v2/segments/shop/production/beta",
        OWNER,
        Some(json!([
            {"op": "add", "path": "/included/0", "value": "ann"},
            {"op": "add", "path": "/rules/0", "value": {"clauses": [
                {"attribute": "country", "op": "in", "values": ["de", "at"], "contextKind": "user", "negate": false}
            ]}}
        ])),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = api(
        address,
        "POST",
        "/api/v2/tokens",
        OWNER,
        Some(json!({"name": "read-only", "role": "reader"})),
    );
    assert_eq!(status, 201, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

fn flag_on(address: &str, env: &str) -> bool {
    let (status, flag) = api(address, "GET", "/api/v2/flags/shop/dark-mode", OWNER, None);
    assert_eq!(status, 200, "{flag}");
    flag["environments"][env]["on"].as_bool().unwrap()
}

/// Where screenshots go: `target/console-screenshots/`.
fn screenshots() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let dir = target.join("console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.unwrap();
    std::fs::write(screenshots().join(format!("{name}.png")), png).unwrap();
}

async fn source(browser: &Client) -> String {
    browser.source().await.unwrap()
}

/// Clicks the element `css` selects.
async fn click(browser: &Client, css: &str) {
    browser
        .find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Waits until an element `css` selects is there.
async fn wait_for(browser: &Client, css: &str) -> fantoccini::elements::Element {
    browser
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(css))
        .await
        .unwrap()
}

/// Waits until the page's path is `path`.
async fn wait_for_path(browser: &Client, path: &str) {
    let start = Instant::now();
    loop {
        let url = browser.current_url().await.unwrap();
        if url.path() == path {
            return;
        }
        assert!(start.elapsed() < WAIT, "at {url}, not {path}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn sign_in(browser: &Client, base: &str, token: &str) {
    browser.goto(&format!("{base}/sign-in")).await.unwrap();
    let field = browser.find(Locator::Css("input#token")).await.unwrap();
    field.send_keys(token).await.unwrap();
    click(browser, "form[action='/sign-in'] button[type=submit]").await;
    wait_for_path(browser, "/projects").await;
}

/// The switch of `dark-mode` in `env`.
fn switch(env: &str, checked: &str) -> String {
    format!("form[id='switch-9-dark-mode.{env}'] button[aria-checked='{checked}']")
}

/// A chromedriver (stopped when dropped) and a headless Chromium session of it.
async fn start_browser() -> (Process, Client) {
    let mut driver_command = Command::new(CHROMEDRIVER);
    let driver_address = free_address();
    let port = driver_address.rsplit(':').next().unwrap().to_owned();
    driver_command
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let driver = Process(driver_command.spawn().unwrap_or_else(|e| {
        panic!("cannot start {CHROMEDRIVER} ({e}): install Debian's chromium and chromium-driver (.ci/run does)")
    }));
    wait_for_port(&driver_address, "chromedriver");
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,860", "--force-color-profile=srgb", "--hide-scrollbars"]
        }),
    );
    let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://{driver_address}"))
        .await
        .expect("a WebDriver session");
    (driver, browser)
}

/// Signed out, the console leads to the sign-in page; signed in, the flag list and a search.
async fn sign_in_and_search(browser: &Client, store: &str, base: &str) {
    // Signed out, the console leads to the sign-in page.
    browser.goto(&format!("{base}/")).await.unwrap();
    wait_for_path(browser, "/sign-in").await;
    screenshot(browser, &format!("{store}-sign-in")).await;
    sign_in(browser, base, OWNER).await;
    assert!(source(browser).await.contains("Production"));
    screenshot(browser, &format!("{store}-projects")).await;

    // The flag list, then a search.
    browser
        .goto(&format!("{base}/projects/shop/flags"))
        .await
        .unwrap();
    wait_for(browser, &switch("test", "false")).await;
    screenshot(browser, &format!("{store}-flag-list")).await;
    let search = browser.find(Locator::Css("input#q")).await.unwrap();
    search.send_keys("dark").await.unwrap();
    click(browser, "form.filters button[type=submit]").await;
    let start = Instant::now();
    while !browser
        .current_url()
        .await
        .unwrap()
        .query()
        .is_some_and(|q| q.contains("q=dark"))
    {
        assert!(start.elapsed() < WAIT, "the search did not load");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let page = source(browser).await;
    assert!(page.contains("Dark mode") && !page.contains("New checkout"));
}

/// Toggles `dark-mode` in test, then in the critical production (which asks first).
async fn toggle_test_then_production(browser: &Client, address: &str) {
    // Toggle in test: the switch turns on in place, and the API says so.
    click(browser, &switch("test", "false")).await;
    wait_for(browser, &switch("test", "true")).await;
    assert!(flag_on(address, "test"));
    assert!(!flag_on(address, "production"));

    // Production is critical: the browser asks first.
    click(browser, &switch("production", "false")).await;
    browser.accept_alert().await.unwrap();
    wait_for(browser, &switch("production", "true")).await;
    assert!(flag_on(address, "production"));
}

/// The flag's page and its history.
async fn read_the_flag_and_its_history(browser: &Client, store: &str, base: &str) {
    browser
        .goto(&format!("{base}/projects/shop/flags/dark-mode"))
        .await
        .unwrap();
    assert!(source(browser).await.contains("Otherwise serve"));
    screenshot(browser, &format!("{store}-flag")).await;
    browser
        .goto(&format!("{base}/projects/shop/flags/dark-mode/history"))
        .await
        .unwrap();
    let history = source(browser).await;
    assert!(history.contains("environments.test.on"), "{history}");
    assert!(history.contains("environments.production.on"));
    assert!(history.contains("(token owner)"), "{history}");
    screenshot(browser, &format!("{store}-history")).await;
}

/// Edit the flag's settings from its page: the page comes back saying so, the API agrees.
async fn edit_the_flag_settings(browser: &Client, store: &str, base: &str, address: &str) {
    browser
        .goto(&format!("{base}/projects/shop/flags/dark-mode"))
        .await
        .unwrap();
    click(browser, "details.edit summary").await;
    let name = wait_for(browser, "input#flag-name").await;
    name.clear().await.unwrap();
    name.send_keys("Dark mode v2").await.unwrap();
    let tags = browser.find(Locator::Css("input#flag-tags")).await.unwrap();
    tags.send_keys(", beta").await.unwrap();
    click(browser, "form#settings-form button[type=submit]").await;
    let saved = wait_for(browser, "p.message.ok").await;
    assert!(saved
        .text()
        .await
        .unwrap()
        .contains("The settings were saved"));
    let (_, flag) = api(address, "GET", "/api/v2/flags/shop/dark-mode", OWNER, None);
    assert_eq!(flag["name"], "Dark mode v2", "{flag}");
    assert_eq!(flag["tags"], json!(["beta", "ui"]), "{flag}");
    screenshot(browser, &format!("{store}-flag-edited")).await;
}

/// Segments of production, and one segment.
async fn read_a_segment(browser: &Client, store: &str, base: &str) {
    browser.goto(&format!("{base}/projects")).await.unwrap();
    click(
        browser,
        "a[href='/projects/shop/environments/production/segments']",
    )
    .await;
    wait_for(
        browser,
        "a[href='/projects/shop/environments/production/segments/beta']",
    )
    .await
    .click()
    .await
    .unwrap();
    wait_for_path(
        browser,
        "/projects/shop/environments/production/segments/beta",
    )
    .await;
    assert!(source(browser).await.contains("user country is one of"));
    screenshot(browser, &format!("{store}-segment")).await;
}

/// Create a token: its secret is shown once, and it works.
async fn create_a_token(browser: &Client, store: &str, address: &str) {
    click(browser, "header nav a[href='/tokens']").await;
    wait_for_path(browser, "/tokens").await;
    click(browser, "details.edit summary").await;
    wait_for(browser, "input#token-name")
        .await
        .send_keys("deploys")
        .await
        .unwrap();
    click(browser, "form#create-token button[type=submit]").await;
    let secret = wait_for(browser, "code#secret").await.text().await.unwrap();
    let (status, _) = api(address, "GET", "/api/v2/projects", secret.trim(), None);
    assert_eq!(status, 200, "the new token works");
    screenshot(browser, &format!("{store}-token-created")).await;
}

/// A stale page: someone turns test off through the API after the page was loaded.
async fn lose_to_a_concurrent_change(browser: &Client, store: &str, base: &str, address: &str) {
    browser
        .goto(&format!("{base}/projects/shop/flags"))
        .await
        .unwrap();
    wait_for(browser, &switch("test", "true")).await;
    screenshot(browser, &format!("{store}-flags-switched")).await;
    let (status, body) = api(
        address,
        "PATCH",
        "/api/v2/flags/shop/dark-mode",
        OWNER,
        Some(Value::String(
            r#"{"environmentKey":"test","instructions":[{"kind":"turnFlagOff"}]}"#.into(),
        )),
    );
    assert_eq!(status, 200, "{body}");
    click(browser, &switch("test", "true")).await;
    let message = browser
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(
            "form[id='switch-9-dark-mode.test'] [role=alert]",
        ))
        .await
        .unwrap();
    assert!(message
        .text()
        .await
        .unwrap()
        .contains("Someone else changed this flag"));
    // It shows the flag as it is now (off), and nothing more was changed.
    browser
        .find(Locator::Css(&switch("test", "false")))
        .await
        .unwrap();
    assert!(!flag_on(address, "test"));
    screenshot(browser, &format!("{store}-conflict")).await;
}

/// Sign out: the session is over.
async fn sign_out(browser: &Client, base: &str) {
    click(browser, "form[action='/sign-out'] button").await;
    wait_for_path(browser, "/sign-in").await;
    browser.goto(&format!("{base}/projects")).await.unwrap();
    wait_for_path(browser, "/sign-in").await;
}

/// A reader sees every switch disabled.
async fn a_reader_cannot_toggle(browser: &Client, store: &str, base: &str, reader: &str) {
    sign_in(browser, base, reader).await;
    browser
        .goto(&format!("{base}/projects/shop/flags"))
        .await
        .unwrap();
    let switches = browser
        .find_all(Locator::Css("button[role=switch]"))
        .await
        .unwrap();
    assert_eq!(switches.len(), 6, "3 flags × 2 environments");
    for button in &switches {
        assert!(!button.is_enabled().await.unwrap());
    }
    screenshot(browser, &format!("{store}-reader")).await;
}

async fn browse(store: &str, base: &str, address: &str, reader: &str) {
    let (_driver, browser) = start_browser().await;
    sign_in_and_search(&browser, store, base).await;
    toggle_test_then_production(&browser, address).await;
    read_the_flag_and_its_history(&browser, store, base).await;
    edit_the_flag_settings(&browser, store, base, address).await;
    read_a_segment(&browser, store, base).await;
    create_a_token(&browser, store, address).await;
    lose_to_a_concurrent_change(&browser, store, base, address).await;
    sign_out(&browser, base).await;
    a_reader_cannot_toggle(&browser, store, base, reader).await;
    browser.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_works_in_a_browser_on_both_stores() {
    // SQLite.
    let file = std::env::temp_dir().join(format!("flagsvc-e2e-{:x}.db", rand::random::<u64>()));
    {
        let (_server, address) = start_server(&file.display().to_string());
        let reader = seed(&address);
        browse("sqlite", &format!("http://{address}"), &address, &reader).await;
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
    // PostgreSQL: a database of its own, as for every test.
    let server_url = std::env::var("FLAGSVC_TEST_POSTGRES_URL")
        .ok()
        .or_else(|| {
            std::env::var("DATABASE_URL")
                .ok()
                .filter(|u| u.starts_with("postgres"))
        })
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let database = adapter_postgres::TestDatabase::create(&server_url).unwrap();
    let (_server, address) = start_server(database.url());
    let reader = seed(&address);
    browse("postgres", &format!("http://{address}"), &address, &reader).await;
}
