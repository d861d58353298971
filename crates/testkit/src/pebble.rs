//! Pebble, Let's Encrypt's ACME test server (Debian's `pebble` package), on 127.0.0.1:
//! its directory over HTTPS with a [`TestCert`] for 127.0.0.1, validations sent to
//! the port the test names (the server under test answers TLS-ALPN-01 there), no
//! sleeps before validating and no nonces refused at random, so a test is quick and
//! repeatable. [`Pebble::root_pem`] is the root its certificates chain to (a new one
//! every start).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::process::{Child, Command};

use crate::TestCert;

/// The variable naming pebble's binary (`cargo xtask peers` sets it).
pub const ENV: &str = "SWITCHYARD_PEBBLE";
/// Where Debian's package puts it.
const DEBIAN: &str = "/usr/bin/pebble";

/// A running pebble, stopped on drop.
pub struct Pebble {
    _child: Child,
    cert: TestCert,
    directory: String,
    management: std::net::SocketAddr,
    dir: tempfile::TempDir,
}

fn binary() -> Result<PathBuf> {
    let path = std::env::var_os(ENV).map_or_else(|| PathBuf::from(DEBIAN), PathBuf::from);
    if !path.is_file() {
        bail!(
            "pebble is not at {}: run `cargo xtask peers` (Debian's pebble package) or set {ENV}",
            path.display()
        );
    }
    Ok(path)
}

impl Pebble {
    /// Starts pebble, validating TLS-ALPN-01 challenges on `tls_port` of the
    /// identifier's address; returns once its directory answers.
    pub async fn start(tls_port: u16) -> Result<Self> {
        let binary = binary()?;
        let dir = tempfile::tempdir().context("a directory for pebble")?;
        let cert = TestCert::new("127.0.0.1")?;
        let listen = crate::local(crate::free_port()?);
        let management = crate::local(crate::free_port()?);
        let config = serde_json::json!({
            "pebble": {
                "listenAddress": listen.to_string(),
                "managementListenAddress": management.to_string(),
                "certificate": cert.cert_path(),
                "privateKey": cert.key_path(),
                "httpPort": crate::free_port()?,
                "tlsPort": tls_port,
                "ocspResponderURL": "",
                "externalAccountBindingRequired": false
            }
        });
        let config_path = dir.path().join("pebble.json");
        std::fs::write(&config_path, config.to_string()).context("writing pebble's config")?;
        let log = std::fs::File::create(dir.path().join("pebble.log")).context("pebble's log")?;
        let child = Command::new(&binary)
            .arg("-config")
            .arg(&config_path)
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .stdout(Stdio::from(log.try_clone().context("pebble's log")?))
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let pebble = Self {
            _child: child,
            cert,
            directory: format!("https://{listen}/dir"),
            management,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while tokio::net::TcpStream::connect(listen).await.is_err() {
            if Instant::now() > deadline {
                bail!(
                    "pebble did not listen on {listen} within 20 s: {}",
                    pebble.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(pebble)
    }

    /// The ACME directory URL.
    pub fn directory(&self) -> &str {
        &self.directory
    }

    /// The PEM file of the certificate pebble's own HTTPS shows (trust it to talk
    /// ACME to it).
    pub fn directory_root(&self) -> PathBuf {
        self.cert.cert_path().to_owned()
    }

    /// The root certificate (PEM) that pebble's issued certificates chain to.
    pub async fn root_pem(&self) -> Result<String> {
        let mut s =
            crate::cert::connect_trusting(self.management, "127.0.0.1", &[&self.cert]).await?;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        s.write_all(b"GET /roots/0 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await?;
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw).await;
        let text = String::from_utf8_lossy(&raw);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .context("pebble's answer has no head")?;
        if !head.starts_with("HTTP/1.1 200") {
            bail!("pebble's /roots/0: {head}");
        }
        Ok(body.to_owned())
    }

    /// A TLS session with `addr` for `name`, once the certificate it serves chains to
    /// pebble's root (retried every 200 ms for 30 s; the error carries pebble's log).
    pub async fn verified(
        &self,
        addr: std::net::SocketAddr,
        name: &str,
    ) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
        let root = self.root_pem().await?;
        let mut roots = rustls::RootCertStore::empty();
        for c in rustls_pemfile::certs(&mut root.as_bytes()) {
            roots.add(c.context("pebble's root")?)?;
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
        let server_name = rustls::pki_types::ServerName::try_from(name.to_owned())
            .with_context(|| format!("{name:?} is not a server name"))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let tcp = tokio::net::TcpStream::connect(addr)
                .await
                .with_context(|| format!("connecting to {addr}"))?;
            match connector.connect(server_name.clone(), tcp).await {
                Ok(s) => return Ok(s),
                Err(e) if Instant::now() > deadline => bail!(
                    "{addr} served no certificate from pebble's root for {name} within 30 s: {e}\n{}",
                    self.log_tail()
                ),
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// The end of pebble's log, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("pebble.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}
