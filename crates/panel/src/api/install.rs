//! `GET /install.sh` and `GET /install/switchyard-linux-<arch>`: what a fresh server
//! fetches to become a node ([`crate::install`]). Both are public: the script and the
//! binary hold no secret, and the join token, which does, is pasted by the operator.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::problem::ApiError;

/// How long a refused download is told to wait before trying again, in seconds.
const RETRY_AFTER_S: u32 = 10;
/// A download still running after this long is cut, freeing its slot: 10 minutes
/// carry a 200 MB binary at under 3 Mbit/s.
const DOWNLOAD_DEADLINE: std::time::Duration = std::time::Duration::from_secs(600);

fn no_installer() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "this panel does not hand out nodes (no binary)",
    )
}

/// The install script, for the panel's public URL.
pub async fn script(State(s): State<AppState>) -> Result<Response, ApiError> {
    let installer = s.installer().ok_or_else(no_installer)?;
    let body = crate::install::script(&s.config().public_base(), installer.arch());
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/x-shellscript; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        body,
    )
        .into_response())
}

/// The binary, streamed from its file; 404 for another system's name, 503 with
/// `Retry-After` when every download slot is taken.
pub async fn binary(
    State(s): State<AppState>,
    Path(file): Path<String>,
) -> Result<Response, ApiError> {
    let installer = s.installer().ok_or_else(no_installer)?;
    let name = format!("switchyard-linux-{}", installer.arch());
    if file != name {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("this panel hands out {name} only"),
        ));
    }
    let Some(slot) = installer.download_slot() else {
        let mut r = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "every download slot is taken; try again shortly",
        )
        .into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_S));
        return Ok(r);
    };
    let unreadable = |e: std::io::Error| {
        tracing::error!(
            "the binary to hand out, {}, cannot be read: {e}",
            installer.binary().display()
        );
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the panel cannot read its binary",
        )
    };
    let file = tokio::fs::File::open(installer.binary())
        .await
        .map_err(unreadable)?;
    let len = file.metadata().await.map_err(unreadable)?.len();
    // The slot is held as long as the body is being sent, up to the deadline.
    let deadline = tokio::time::Instant::now() + DOWNLOAD_DEADLINE;
    let stream = futures_util::StreamExt::map(tokio_util::io::ReaderStream::new(file), move |c| {
        let _held = &slot;
        if tokio::time::Instant::now() > deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the download took too long",
            ));
        }
        c
    });
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (header::CONTENT_LENGTH, HeaderValue::from(len)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}
