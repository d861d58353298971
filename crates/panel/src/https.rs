//! The panel's own certificate (`tls` in its config): read at start (a bad file stops
//! the start, naming it), then read again every `reload_s` seconds; a renewal in place
//! (same files, new content, as ACME clients write them) is served to new
//! connections, while a broken file keeps the old certificate and says why in the log.

use std::sync::Arc;
use std::time::Duration;

use switchyard_transport::certificate::{Certificate, load};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::config::TlsFiles;

/// Loads the certificate, starts its reloads (until `stop`) and gives the acceptor
/// both listeners use; the error names the file at fault.
pub(crate) async fn start(files: TlsFiles, stop: CancellationToken) -> Result<TlsAcceptor, String> {
    let first = read(&files).await?;
    let certificate = Certificate::new(first);
    let acceptor = certificate.acceptor().map_err(|e| e.to_string())?;
    let files = Arc::new(files);
    let each = stop.clone();
    switchyard_tunnel::supervise::supervise(
        "panel tls: certificate reloads".into(),
        stop,
        Arc::default(),
        move || reload(files.clone(), certificate.clone(), each.clone()),
    );
    Ok(acceptor)
}

/// Reads the files again every `reload_s` and serves a renewal, until `stop`.
async fn reload(files: Arc<TlsFiles>, certificate: Arc<Certificate>, stop: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_secs(files.reload_s.max(1)));
    every.tick().await;
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = stop.cancelled() => return,
        }
        match read(&files).await {
            Ok(loaded) => {
                if certificate.set(loaded) {
                    tracing::info!(
                        "tls: {} renewed: serving the new certificate",
                        files.certificate.display()
                    );
                }
            }
            Err(e) => tracing::error!("tls: {e}; still serving the certificate read before"),
        }
    }
}

async fn read(files: &TlsFiles) -> Result<switchyard_transport::certificate::Loaded, String> {
    let (cert, key) = (files.certificate.clone(), files.key.clone());
    tokio::task::spawn_blocking(move || load(&cert, &key).map_err(|e| e.to_string()))
        .await
        .map_err(|e| e.to_string())?
}
