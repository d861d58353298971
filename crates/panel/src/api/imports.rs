//! Bringing users from another panel through the API (and so the web UI): the
//! source's SQLite database is the request body, streamed to a private file in the
//! panel's data directory (at most [`MAX_UPLOAD`] bytes), imported as
//! `switchyard panel import` does, and removed; Remnawave's PostgreSQL database is
//! named by its URL in a JSON body instead, and read where it is. One import runs at
//! a time.

use std::path::PathBuf;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::io::AsyncWriteExt;
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Id, Problem, Query};
use crate::import::{self, ImportError, Report};

/// The largest database taken by upload (the CLI takes any).
pub const MAX_UPLOAD: u64 = 256 * 1024 * 1024;

/// How an upload is imported.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ImportQuery {
    /// Say what would happen; keep nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Disable the users an earlier import brought that the source no longer has.
    #[serde(default)]
    pub disable_missing: bool,
    /// Marzneshin only: its `AUTH_GENERATION_ALGORITHM` was `plain` (credentials
    /// are the users' keys themselves; by default they are derived with `xxh128`).
    #[serde(default)]
    pub plain_keys: bool,
    /// Make the source's inbounds that a node here serves on this server (its name
    /// here), with their ports, transports, security and REALITY keys; one whose
    /// name an inbound here already has is mapped to it. Marzban's inbounds are in
    /// its `xray_config.json`, which only the command reads.
    #[serde(default)]
    #[param(max_length = 64)]
    pub server: Option<String>,
}

/// The largest JSON body naming a database.
const MAX_SOURCE_BODY: usize = 8 * 1024;

/// Where the source's database is: the body of `POST /api/v1/imports/remnawave`
/// (PostgreSQL), of `POST /api/v1/imports/marzban` for Marzban on MySQL and of
/// `POST /api/v1/imports/pasarguard` or `…/marzneshin` for PasarGuard or
/// Marzneshin on PostgreSQL or MySQL.
#[derive(Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSource {
    /// `postgres://USER:PASSWORD@HOST:PORT/DB` (Remnawave, PasarGuard, Marzneshin)
    /// or `mysql://USER:PASSWORD@HOST:PORT/DB` (Marzban, PasarGuard, Marzneshin):
    /// read in one read-only transaction; never stored, and named in errors without
    /// its password.
    pub database_url: String,
}

impl std::fmt::Debug for DatabaseSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DatabaseSource(<redacted>)")
    }
}

/// The uploaded file, removed when dropped.
struct Upload(PathBuf);

impl Drop for Upload {
    fn drop(&mut self) {
        let path = std::mem::take(&mut self.0);
        // Off the runtime's threads where there is one (a large file's unlink can
        // take a while); in place otherwise.
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn_blocking(move || {
                    let _ = std::fs::remove_file(path);
                });
            }
            Err(_) => {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// Imports the users of another panel's database (`marzban`: Marzban 0.8's
/// `db.sqlite3`, or with a JSON body `{"database_url": "mysql://…"}` Marzban's
/// MySQL or MariaDB database; `pasarguard`: PasarGuard 1.0 to 5.2's `db.sqlite3`, or
/// with a JSON body its PostgreSQL, MySQL or MariaDB database; `marzneshin`
/// likewise:
/// Marzneshin 0.4 to 0.7's `db.sqlite3`; `3x-ui`: 3x-ui 2.x or 3.x's `x-ui.db`), sent as the body; for
/// `remnawave`, the body names its PostgreSQL database (`{"database_url": …}`). The
/// answer is the report: what was (or, with `dry_run`, would be) added, updated and
/// disabled, the source's inbounds and nodes, and what could not be carried.
#[utoipa::path(post, path = "/api/v1/imports/{source}", tag = "imports",
    params(("source" = String, Path, description = "`marzban`, `pasarguard`, `marzneshin`, `3x-ui` or `remnawave`"), ImportQuery),
    request_body(content((Vec<u8> = "application/octet-stream"), (DatabaseSource = "application/json")),
        description = "The source panel's SQLite database file; for `remnawave` (and `marzban`, `pasarguard` or `marzneshin` on a database server), where its database is"),
    responses((status = 200, body = Report), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem),
        (status = 413, body = Problem), (status = 422, body = Problem)))]
pub async fn import(
    State(s): State<AppState>,
    _a: Authed,
    Id(source): Id<String>,
    Query(q): Query<ImportQuery>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> Result<Json<Report>, ApiError> {
    if ![
        import::MARZBAN,
        import::PASARGUARD,
        import::MARZNESHIN,
        import::XUI,
        import::REMNAWAVE,
    ]
    .contains(&source.as_str())
    {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "no import from {source:?}: marzban, pasarguard, marzneshin, 3x-ui or remnawave"
            ),
        ));
    }
    let Ok(_running) = s.imports().try_lock() else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "an import is running: try again when it is done",
        ));
    };
    let store = s.store().as_ref();
    if let Some(server) = &q.server {
        import::server_named(store, server)
            .await
            .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, format!("server: {e}")))?;
    }
    let mut report = read(&s, &source, &q, &headers, body).await?;
    if let Some(server) = &q.server {
        import::make_inbounds(s.service(), &mut report, server, s.now())
            .await
            .map_err(|e| match e {
                ImportError::Store(e) => e.into(),
                other => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, other.to_string()),
            })?;
    }
    Ok(Json(report))
}

/// Reads the source named in the request and imports its users.
async fn read(
    s: &AppState,
    source: &str,
    q: &ImportQuery,
    headers: &axum::http::HeaderMap,
    body: axum::body::Body,
) -> Result<Report, ApiError> {
    let store = s.store().as_ref();
    let flags = (q.dry_run, q.disable_missing);
    // A database named by URL: Remnawave's always, the others' on a server when the
    // body is JSON.
    let by_url = json_body(headers) || source == import::REMNAWAVE;
    let schemes: &[&str] = match source {
        _ if !by_url => &[],
        s if s == import::REMNAWAVE => &["postgres://", "postgresql://"],
        s if s == import::MARZBAN => &["mysql://", "mariadb://"],
        s if s == import::PASARGUARD || s == import::MARZNESHIN => {
            &["postgres://", "postgresql://", "mysql://", "mariadb://"]
        }
        _ => &[],
    };
    if !schemes.is_empty() {
        let DatabaseSource { database_url: url } = database_source(body, schemes).await?;
        let report = if source == import::REMNAWAVE {
            import::remnawave(store, &url, flags, s.now()).await
        } else if source == import::MARZBAN {
            import::marzban_url(store, &url, None, flags, s.now()).await
        } else if source == import::PASARGUARD {
            import::pasarguard_url(store, &url, flags, s.now()).await
        } else {
            import::marzneshin_url(store, &url, marzneshin_auth(q), flags, s.now()).await
        };
        return report.map_err(by_url_error);
    }
    let upload = receive(s, body).await?;
    let report = if source == import::MARZBAN {
        import::marzban(store, &upload.0, None, flags, s.now()).await
    } else if source == import::PASARGUARD {
        import::pasarguard(store, &upload.0, flags, s.now()).await
    } else if source == import::MARZNESHIN {
        import::marzneshin(store, &upload.0, marzneshin_auth(q), flags, s.now()).await
    } else {
        import::xui(store, &upload.0, flags, s.now()).await
    };
    report.map_err(|e| match e {
        ImportError::Store(e) => e.into(),
        ImportError::Internal => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
        // What is wrong with the file, named (no path: the file is ours).
        ImportError::Open { source, .. } => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("the file is not a database this import can read: {source}"),
        ),
        other => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            other
                .to_string()
                .replace(&upload.0.display().to_string(), "the file"),
        ),
    })
}

/// How Marzneshin derived its users' credentials, as the query says.
fn marzneshin_auth(q: &ImportQuery) -> import::marzneshin::Auth {
    if q.plain_keys {
        import::marzneshin::Auth::Plain
    } else {
        import::marzneshin::Auth::Xxh128
    }
}

/// The body naming a database, whose URL must start with one of `schemes`.
async fn database_source(
    body: axum::body::Body,
    schemes: &[&str],
) -> Result<DatabaseSource, ApiError> {
    let bytes = axum::body::to_bytes(body, MAX_SOURCE_BODY)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is larger than {MAX_SOURCE_BODY} bytes"),
            )
        })?;
    let source: DatabaseSource = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "the body must be {{\"database_url\": \"{}…\"}}: {e}",
                schemes[0]
            ),
        )
    })?;
    if !schemes.iter().any(|s| source.database_url.starts_with(s)) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("database_url: must start with {}", schemes.join(" or ")),
        ));
    }
    Ok(source)
}

/// The answer to a failed import of a database named by URL: what the reader says
/// names the database without its password (`import::remnawave`,
/// `import::source_db::describe`).
fn by_url_error(e: ImportError) -> ApiError {
    match e {
        ImportError::Store(e) => e.into(),
        ImportError::Internal => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
        other => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, other.to_string()),
    }
}

/// Whether the request's body is JSON (a database named by URL, not a file).
fn json_body(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// Streams `body` to a new private file in the data directory.
async fn receive(s: &AppState, body: axum::body::Body) -> Result<Upload, ApiError> {
    let internal = |e: std::io::Error| {
        tracing::error!(error = %e, "cannot keep an uploaded import");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
    };
    let dir = s.config().data_dir.clone();
    let name = format!("import-{}.db", crate::service::new_subscription_token());
    let upload = Upload(dir.join(name));
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&upload.0)
        .await
        .map_err(internal)?;
    let mut stream = body.into_data_stream();
    let mut total = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("the upload broke off: {e}"),
            )
        })?;
        total = total.saturating_add(chunk.len() as u64);
        if total > MAX_UPLOAD {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "larger than {} MiB: import it with `switchyard panel import`",
                    MAX_UPLOAD >> 20
                ),
            ));
        }
        file.write_all(&chunk).await.map_err(internal)?;
    }
    file.sync_all().await.map_err(internal)?;
    Ok(upload)
}
