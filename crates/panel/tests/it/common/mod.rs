//! The API without a socket: the router over a `SqlStore` on a temporary SQLite file,
//! driven with `oneshot`, and small builders for requests and their answers.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use switchyard_panel::PanelConfig;
use switchyard_panel::api::{self, AppState, JoinEncoder};
use switchyard_panel::metrics::Metrics;
use switchyard_panel::store::{AccountStore, Changes, SqlStore, Store};
use tower::ServiceExt;

/// The admin every harness has.
pub const ADMIN: &str = "admin";
/// Their password.
pub const PASSWORD: &str = "correct horse battery staple";

/// A router over a fresh database.
pub struct Harness {
    pub app: Router,
    pub state: AppState,
    pub store: SqlStore,
    pub db: PathBuf,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// A harness with the default config (`http://` public URL).
    pub async fn new() -> Self {
        Self::with(PanelConfig {
            public_url: Some("http://panel.test".into()),
            ..PanelConfig::default()
        })
        .await
    }

    /// A harness with `config`.
    pub async fn with(mut config: PanelConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        config.data_dir = dir.path().to_owned();
        let db = dir.path().join("panel.db");
        let store = SqlStore::open_sqlite(&db, Changes::default())
            .await
            .unwrap();
        Self::assemble(config, store, db, dir).await
    }

    /// A harness over `store` (a PostgreSQL one: what is run on both backends).
    pub async fn over(store: SqlStore) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = PanelConfig {
            public_url: Some("http://panel.test".into()),
            data_dir: dir.path().to_owned(),
            ..PanelConfig::default()
        };
        Self::assemble(config, store, PathBuf::new(), dir).await
    }

    async fn assemble(
        config: PanelConfig,
        store: SqlStore,
        db: PathBuf,
        dir: tempfile::TempDir,
    ) -> Self {
        let hash = api::auth::hash_password(PASSWORD).unwrap();
        store.create_admin(ADMIN, &hash, 0).await.unwrap();
        let join: JoinEncoder = Arc::new(|s: &str| format!("join-{s}"));
        let shared: Arc<dyn Store> = Arc::new(store.clone());
        let state = AppState::new(
            shared,
            store.changes(),
            config,
            join,
            Arc::new(Metrics::default()),
        );
        Self {
            app: api::router(state.clone()),
            state,
            store,
            db,
            _dir: dir,
        }
    }

    /// A request to `path`.
    pub fn req(&self, method: Method, path: &str) -> Req<'_> {
        Req {
            harness: self,
            builder: Request::builder().method(method).uri(path),
            body: Body::empty(),
        }
    }

    pub fn get(&self, path: &str) -> Req<'_> {
        self.req(Method::GET, path)
    }

    pub fn post(&self, path: &str) -> Req<'_> {
        self.req(Method::POST, path)
    }

    pub fn put(&self, path: &str) -> Req<'_> {
        self.req(Method::PUT, path)
    }

    pub fn delete(&self, path: &str) -> Req<'_> {
        self.req(Method::DELETE, path)
    }

    /// Logs in as the admin; the session's cookie (`name=value`) and CSRF token.
    pub async fn login(&self) -> Session {
        let r = self
            .post("/api/v1/session")
            .json(&json!({"username": ADMIN, "password": PASSWORD}))
            .send()
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        let set = r.header(header::SET_COOKIE.as_str()).unwrap();
        let cookie = set.split(';').next().unwrap().to_owned();
        Session {
            cookie,
            csrf: r.json()["csrf_token"].as_str().unwrap().to_owned(),
        }
    }

    /// A fresh API token's secret.
    pub async fn token(&self) -> String {
        let s = self.login().await;
        let r = self
            .post("/api/v1/tokens")
            .session(&s)
            .json(&json!({"name": "tests"}))
            .send()
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
        r.json()["secret"].as_str().unwrap().to_owned()
    }
}

/// A logged-in session.
#[derive(Clone, Debug)]
pub struct Session {
    /// `switchyard_session=...`.
    pub cookie: String,
    pub csrf: String,
}

/// A request being built.
pub struct Req<'a> {
    harness: &'a Harness,
    builder: axum::http::request::Builder,
    body: Body,
}

impl Req<'_> {
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.builder = self.builder.header(name, value);
        self
    }

    pub fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// The cookie and the CSRF token.
    pub fn session(self, s: &Session) -> Self {
        self.cookie(s).header("x-csrf-token", &s.csrf)
    }

    /// The cookie alone.
    pub fn cookie(self, s: &Session) -> Self {
        self.header("cookie", &s.cookie)
    }

    pub fn json(mut self, v: &Value) -> Self {
        self.builder = self.builder.header("content-type", "application/json");
        self.body = Body::from(serde_json::to_vec(v).unwrap());
        self
    }

    pub fn raw(mut self, content_type: &str, body: &str) -> Self {
        self.builder = self.builder.header("content-type", content_type);
        self.body = Body::from(body.to_owned());
        self
    }

    /// A body of bytes.
    pub fn bytes(mut self, content_type: &str, body: Vec<u8>) -> Self {
        self.builder = self.builder.header("content-type", content_type);
        self.body = Body::from(body);
        self
    }

    /// As if from `addr`.
    pub fn peer(mut self, addr: &str) -> Self {
        let addr: SocketAddr = addr.parse().unwrap();
        self.builder = self.builder.extension(ConnectInfo(addr));
        self
    }

    pub async fn send(self) -> Reply {
        let req = self.builder.body(self.body).unwrap();
        let response = self.harness.app.clone().oneshot(req).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Reply {
            status,
            headers,
            body: body.to_vec(),
        }
    }
}

/// An answer.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v: &HeaderValue| v.to_str().unwrap().to_owned())
    }

    /// Asserts a problem document with `status`; returns it.
    #[track_caller]
    pub fn problem(&self, status: StatusCode) -> Value {
        assert_eq!(self.status, status, "{}", self.text());
        assert_eq!(
            self.header("content-type").as_deref(),
            Some("application/problem+json"),
            "{}",
            self.text()
        );
        let p = self.json();
        assert_eq!(p["status"], status.as_u16(), "{p}");
        assert!(p["detail"].as_str().is_some_and(|d| !d.is_empty()), "{p}");
        p
    }

    /// Asserts a 422 (or `status`) naming `field` first.
    #[track_caller]
    pub fn field_error(&self, status: StatusCode, field: &str) -> Value {
        let p = self.problem(status);
        assert_eq!(p["errors"][0]["field"], field, "{p}");
        p
    }

    #[track_caller]
    pub fn ok(&self, status: StatusCode) -> Value {
        assert_eq!(self.status, status, "{}", self.text());
        if self.body.is_empty() {
            Value::Null
        } else {
            self.json()
        }
    }
}

/// A VLESS inbound over TLS with a self-signed certificate.
pub fn vless(server_id: i64, name: &str, port: u16) -> Value {
    json!({
        "server_id": server_id, "name": name, "protocol": "vless", "port": port,
        "security": {"type": "tls", "certificate": {"source": "self_signed"}},
        "sni": "vpn.example.com",
    })
}

/// A cluster `main` and in it a server `ny-1` at 203.0.113.1, made through the API;
/// the server's id.
pub async fn server(h: &Harness, t: &str) -> i64 {
    server_at(h, t, "ny-1", "203.0.113.1").await
}

/// A cluster `main` and in it a server `name` at `address`, made through the API; the
/// server's id.
pub async fn server_at(h: &Harness, t: &str, name: &str, address: &str) -> i64 {
    let c = h
        .post("/api/v1/clusters")
        .bearer(t)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    h.post("/api/v1/servers")
        .bearer(t)
        .json(&json!({"cluster_id": c["id"], "name": name, "address": address}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap()
}

/// A cluster `eu` with a server `de-1` and its VLESS+TLS inbound `Frankfurt`, and the
/// user `alice`: the cluster's id and the user, as the API answered.
pub async fn one_user(h: &Harness, t: &str) -> (Value, Value) {
    let c = h
        .post("/api/v1/clusters")
        .bearer(t)
        .json(&serde_json::json!({"name": "eu"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .clone();
    let s = h
        .post("/api/v1/servers")
        .bearer(t)
        .json(&serde_json::json!({"cluster_id": c, "name": "de-1", "address": "203.0.113.1"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    h.post("/api/v1/inbounds")
        .bearer(t)
        .json(&vless(s, "Frankfurt", 443))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let user = h
        .post("/api/v1/users")
        .bearer(t)
        .json(&serde_json::json!({"username": "alice"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    (c, user)
}

/// The panel started again on the ports its last run held. Those came from the
/// ephemeral range, and while they were free another test's outgoing connection may
/// have taken one as its source port (a clean-clone CI run failed so: "Address
/// already in use"): the bind is tried again until that connection is gone.
pub async fn start_again(config: impl Fn() -> PanelConfig) -> switchyard_panel::Panel {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match switchyard_panel::Panel::start(config()).await {
            Ok(panel) => return panel,
            Err(switchyard_panel::run::StartError::Bind { source, .. })
                if source.kind() == std::io::ErrorKind::AddrInUse
                    && std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Err(e) => panic!("the panel starting again: {e}"),
        }
    }
}
