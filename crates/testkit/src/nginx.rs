//! A real nginx (Debian's package) standing in for a CDN in front of a node: it ends
//! the user's TLS with its own certificate and passes requests on to the node as a
//! CDN does, WebSocket and HTTPUpgrade through `proxy_pass` with the upgrade headers,
//! XHTTP through `proxy_pass` as plain HTTP/1.1, gRPC through `grpc_pass`, buffering
//! off; each pass appends the client's address to `X-Forwarded-For`, as a CDN does.
//!
//! [`binary`] finds it: the path in [`ENV`] when set (`cargo xtask test` sets it),
//! else `/usr/sbin/nginx`; a missing binary is an error telling to run `cargo xtask
//! peers`, which installs the package. Each [`Nginx`] runs in the foreground from a
//! config in its own temporary directory (pid file, temp paths, error log there),
//! listening on 127.0.0.1 only, and is killed on drop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Result, bail};

use crate::TestCert;
use crate::peer::{self, Process};

/// The variable holding the absolute path of the nginx binary.
pub const ENV: &str = "SWITCHYARD_NGINX";

/// Where Debian's package puts it.
const DEBIAN: &str = "/usr/sbin/nginx";

/// The nginx binary: [`ENV`] when set, else Debian's; fails, saying to run `cargo
/// xtask peers`, when neither is there.
pub fn binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(ENV).map(PathBuf::from) {
        if path.is_file() {
            return Ok(path);
        }
        bail!(
            "{ENV}={} but there is no file there: run `cargo xtask peers` (it installs \
             Debian's nginx) or unset {ENV}",
            path.display()
        );
    }
    let debian = PathBuf::from(DEBIAN);
    if debian.is_file() {
        return Ok(debian);
    }
    bail!(
        "nginx is not installed ({ENV} is unset, nothing at {DEBIAN}): run `cargo xtask \
         peers` (or `cargo xtask test`, which does it first)"
    )
}

/// What one `location` passes on, and how.
#[derive(Debug, Clone)]
pub enum Pass {
    /// Requests under `prefix` go to `upstream` over HTTP/1.1 with the `Upgrade` and
    /// `Connection` headers passed on (WebSocket, HTTPUpgrade), buffering off.
    Upgrade {
        /// The path prefix, e.g. `/up`.
        prefix: String,
        /// The node's plain address.
        upstream: SocketAddr,
    },
    /// Requests under `prefix` go to `upstream` over HTTP/1.1 as a CDN passes
    /// ordinary requests (XHTTP): no upgrade headers, buffering off both ways
    /// (request bodies passed on as they stream, chunked), no body size cap.
    Http {
        /// The path prefix, e.g. `/xh/`.
        prefix: String,
        /// The node's plain address.
        upstream: SocketAddr,
    },
    /// Requests under `/{service}/` go to `upstream` over cleartext HTTP/2
    /// (`grpc_pass grpc://`).
    Grpc {
        /// The gRPC service name.
        service: String,
        /// The node's plain address.
        upstream: SocketAddr,
    },
}

impl Pass {
    fn location(&self) -> String {
        match self {
            Self::Upgrade { prefix, upstream } => format!(
                "location {prefix} {{\n\
                 proxy_pass http://{upstream};\n\
                 proxy_http_version 1.1;\n\
                 proxy_set_header Upgrade $http_upgrade;\n\
                 proxy_set_header Connection \"upgrade\";\n\
                 proxy_set_header Host $host;\n\
                 proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
                 proxy_buffering off;\n\
                 proxy_request_buffering off;\n\
                 proxy_read_timeout 300s;\n\
                 proxy_send_timeout 300s;\n\
                 }}\n"
            ),
            Self::Http { prefix, upstream } => format!(
                "location {prefix} {{\n\
                 proxy_pass http://{upstream};\n\
                 proxy_http_version 1.1;\n\
                 proxy_set_header Connection \"\";\n\
                 proxy_set_header Host $host;\n\
                 proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
                 proxy_buffering off;\n\
                 proxy_request_buffering off;\n\
                 client_max_body_size 0;\n\
                 proxy_read_timeout 300s;\n\
                 proxy_send_timeout 300s;\n\
                 }}\n"
            ),
            Self::Grpc { service, upstream } => format!(
                "location /{service}/ {{\n\
                 grpc_pass grpc://{upstream};\n\
                 grpc_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
                 grpc_read_timeout 300s;\n\
                 grpc_send_timeout 300s;\n\
                 client_max_body_size 0;\n\
                 client_body_timeout 300s;\n\
                 }}\n"
            ),
        }
    }
}

/// A running nginx, killed when dropped; its error log's tail is printed when the
/// test panics.
#[derive(Debug)]
pub struct Nginx {
    process: Process,
    addr: SocketAddr,
    /// The certificate it serves, when TLS.
    _cert: Option<std::sync::Arc<TestCert>>,
}

/// The nginx config: one server on `addr` (TLS with `cert` when given, HTTP/2
/// offered either way) with `passes`, and `404` for every other path, as a site
/// that has nothing there answers.
fn config(
    dir: &std::path::Path,
    addr: SocketAddr,
    cert: Option<&TestCert>,
    passes: &[Pass],
) -> String {
    let dir = dir.display();
    // As root, nginx's workers would switch to `nobody`, who cannot use the
    // temporary directory; they stay root (the master binds 127.0.0.1 only).
    let user = if running_as_root() {
        "user root root;\n"
    } else {
        ""
    };
    // One process, no master: killing it on drop ends all of nginx (a master killed
    // outright leaves its worker running, orphaned, after the test).
    let (ssl, tls) = match cert {
        Some(cert) => (
            " ssl",
            format!(
                "ssl_certificate {};\nssl_certificate_key {};\n",
                cert.cert_path().display(),
                cert.key_path().display()
            ),
        ),
        None => ("", String::new()),
    };
    let locations: String = passes.iter().map(Pass::location).collect();
    format!(
        "{user}daemon off;\n\
         master_process off;\n\
         pid {dir}/nginx.pid;\n\
         error_log {dir}/error.log info;\n\
         events {{ worker_connections 512; }}\n\
         http {{\n\
         access_log off;\n\
         client_body_temp_path {dir}/body;\n\
         proxy_temp_path {dir}/proxy;\n\
         fastcgi_temp_path {dir}/fastcgi;\n\
         uwsgi_temp_path {dir}/uwsgi;\n\
         scgi_temp_path {dir}/scgi;\n\
         server {{\n\
         listen {addr}{ssl} http2;\n\
         server_name cdn.test;\n\
         {tls}\
         {locations}\
         location / {{ return 404; }}\n\
         }}\n\
         }}\n"
    )
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

impl Nginx {
    /// Checks the config with `nginx -t`, runs nginx on `addr` (127.0.0.1) with
    /// `passes`, over TLS with `cert` when given, and waits until it listens.
    pub async fn start(
        addr: SocketAddr,
        cert: Option<std::sync::Arc<TestCert>>,
        passes: &[Pass],
    ) -> Result<Self> {
        let binary = binary()?;
        let dir = peer::public_dir("switchyard-nginx-")?;
        let text = config(dir.path(), addr, cert.as_deref(), passes);
        let path = peer::write_public(dir.path(), "nginx.conf", &text)?;
        let mut check = tokio::process::Command::new(&binary);
        check
            .arg("-t")
            .arg("-e")
            .arg("stderr")
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&path);
        if let Err(said) = peer::check(check).await? {
            bail!("`nginx -t` rejected the config: {said}\nThe config:\n{text}");
        }
        let mut command = Command::new(&binary);
        command
            .arg("-e")
            .arg("stderr")
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&path);
        let process = Process::spawn("nginx", command, dir, &[(addr, true)]).await?;
        Ok(Self {
            process,
            addr,
            _cert: cert,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The last lines of its error log (and of its standard error).
    pub fn log_tail(&self) -> String {
        let errors =
            std::fs::read_to_string(self.process.dir().join("error.log")).unwrap_or_default();
        let lines: Vec<&str> = errors.lines().collect();
        let start = lines.len().saturating_sub(40);
        format!("{}\n{}", self.process.log_tail(), lines[start..].join("\n"))
    }
}
