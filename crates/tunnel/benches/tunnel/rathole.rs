//! rathole 0.5.0 under test: its server and its client, each its own process, with
//! the `tls` transport (native-tls, so OpenSSL on Linux). The server holds a PKCS#12
//! identity for `localhost` issued by a throwaway CA; the client trusts that CA. The
//! server forwards one service port to the target through the client. Both processes
//! are killed when [`Rathole`] is dropped, on success, error or panic alike.

use std::fs::{self, File};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tempfile::TempDir;

use crate::load::{Way, free_addr};

/// The variable naming the rathole binary (`cargo xtask bench tunnel` builds it).
pub(crate) const BINARY_ENV: &str = "SWITCHYARD_RATHOLE";
const PKCS12_PASSWORD: &str = "bench";
const TOKEN: &str = "bench-token";

/// The certificates, in a directory removed when dropped.
pub(crate) struct Certs {
    dir: TempDir,
}

impl Certs {
    /// A CA and a P-256 server certificate for `localhost` signed by it (the same
    /// key type as our tunnel certificate), made with the `openssl` command.
    pub(crate) fn make() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("switchyard-tbench-")
            .tempdir()?;
        let d = dir.path();
        fs::write(d.join("san.ext"), "subjectAltName=DNS:localhost\n")?;
        let steps: [&[&str]; 4] = [
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "30",
                "-subj",
                "/CN=switchyard bench CA",
            ],
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.pem",
                "-days",
                "30",
                "-extfile",
                "san.ext",
            ],
            &[
                "pkcs12",
                "-export",
                "-out",
                "identity.pfx",
                "-inkey",
                "server.key",
                "-in",
                "server.pem",
                "-certfile",
                "ca.pem",
                "-passout",
                &format!("pass:{PKCS12_PASSWORD}"),
            ],
        ];
        for args in steps {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(d)
                .output()
                .context("running `openssl`: is it installed (Debian package openssl)?")?;
            if !out.status.success() {
                bail!(
                    "`openssl {}` failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        Ok(Self { dir })
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }
}

/// rathole's binary: [`BINARY_ENV`].
pub(crate) fn binary() -> Result<PathBuf> {
    let path = std::env::var_os(BINARY_ENV).map(PathBuf::from).with_context(|| {
        format!("{BINARY_ENV} is not set: run `cargo xtask bench tunnel`, which builds rathole 0.5.0 and sets it")
    })?;
    if !path.is_file() {
        bail!("{BINARY_ENV}={} is not a file", path.display());
    }
    Ok(path)
}

/// A rathole server and client, killed when dropped.
pub(crate) struct Rathole {
    server: Child,
    client: Child,
    service: SocketAddr,
    dir: TempDir,
}

impl Rathole {
    /// Starts both with the service forwarded to `target`, and waits until a request
    /// goes through. The server listens for its client on `control`; the client
    /// dials `dialed`: `control` itself, or a sniffing relay in front of it.
    pub(crate) async fn start(
        bin: &Path,
        certs: &Certs,
        target: SocketAddr,
        control: SocketAddr,
        dialed: SocketAddr,
    ) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("switchyard-rathole-")
            .tempdir()?;
        let service = free_addr()?;
        let server_toml = format!(
            "[server]\nbind_addr = \"{control}\"\ndefault_token = \"{TOKEN}\"\n\n\
             [server.transport]\ntype = \"tls\"\n\n[server.transport.tls]\n\
             pkcs12 = \"{}\"\npkcs12_password = \"{PKCS12_PASSWORD}\"\n\n\
             [server.services.target]\nbind_addr = \"{service}\"\n",
            certs.path("identity.pfx").display()
        );
        let client_toml = format!(
            "[client]\nremote_addr = \"{dialed}\"\ndefault_token = \"{TOKEN}\"\n\n\
             [client.transport]\ntype = \"tls\"\n\n[client.transport.tls]\n\
             trusted_root = \"{}\"\nhostname = \"localhost\"\n\n\
             [client.services.target]\nlocal_addr = \"{target}\"\n",
            certs.path("ca.pem").display()
        );
        fs::write(dir.path().join("server.toml"), server_toml)?;
        fs::write(dir.path().join("client.toml"), client_toml)?;
        let server = spawn(bin, dir.path(), "server")?;
        let client = match spawn(bin, dir.path(), "client") {
            Ok(c) => c,
            Err(e) => {
                kill(server);
                return Err(e);
            }
        };
        let rathole = Self {
            server,
            client,
            service,
            dir,
        };
        rathole.ready().await?;
        Ok(rathole)
    }

    async fn ready(&self) -> Result<()> {
        let start = Instant::now();
        let way = self.way();
        loop {
            let tried = async {
                let mut c = way.request(1).await?;
                let mut b = [0u8; 1];
                tokio::io::AsyncReadExt::read_exact(&mut c, &mut b).await?;
                anyhow::Ok(())
            };
            match tokio::time::timeout(Duration::from_secs(2), tried).await {
                Ok(Ok(())) => return Ok(()),
                _ if start.elapsed() > Duration::from_secs(20) => {
                    bail!(
                        "rathole did not forward a request within 20 s; server log:\n{}\nclient log:\n{}",
                        self.log("server"),
                        self.log("client")
                    )
                }
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    fn log(&self, part: &str) -> String {
        fs::read_to_string(self.dir.path().join(format!("{part}.log"))).unwrap_or_default()
    }

    /// The way to the target through rathole's forwarded port.
    pub(crate) fn way(&self) -> Way {
        Way::Tcp(self.service)
    }

    /// The server's and the client's process ids.
    pub(crate) fn pids(&self) -> [u32; 2] {
        [self.server.id(), self.client.id()]
    }

    /// Pins the server and the client to the tunnel's core.
    pub(crate) fn pin(&self, cores: switchyard_testkit::pin::Cores) -> Result<()> {
        for pid in self.pids() {
            cores.pin_server(pid)?;
        }
        Ok(())
    }

    /// CPU time the server and the client have used so far, in seconds.
    pub(crate) fn cpu_seconds(&self) -> Result<f64> {
        let mut sum = 0.0;
        for pid in self.pids() {
            sum += switchyard_testkit::pin::cpu_seconds(&format!("/proc/{pid}/stat"))?;
        }
        Ok(sum)
    }
}

impl Drop for Rathole {
    fn drop(&mut self) {
        for c in [&mut self.server, &mut self.client] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn kill(mut c: Child) {
    let _ = c.kill();
    let _ = c.wait();
}

fn spawn(bin: &Path, dir: &Path, part: &str) -> Result<Child> {
    let log = File::create(dir.join(format!("{part}.log")))?;
    Command::new(bin)
        .arg(format!("--{part}"))
        .arg(dir.join(format!("{part}.toml")))
        // Per-connection lines at `info` would cost rathole time ours does not spend.
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {} --{part}", bin.display()))
}
