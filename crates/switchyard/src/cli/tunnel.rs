//! `switchyard tunnel init`: a tunnel for operators who run nodes without the panel.

use std::fmt::Write as _;
use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential, tunnel_tag};
use switchyard_tunnel::link::cert::issue;

/// Tunnels between nodes.
#[derive(Debug, Subcommand)]
pub(crate) enum TunnelCommand {
    /// Generate a tunnel's secret, certificate and the config snippet of every node.
    Init(Init),
}

impl TunnelCommand {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        match self {
            Self::Init(init) => init.run(),
        }
    }
}

/// Writes `<out>/<name>.crt`, `.key`, `.secret`, `relay.toml` and `origin-<name>.toml`
/// snippets (paste each into that node's config).
#[derive(Debug, Args)]
pub(crate) struct Init {
    /// The tunnel's name (it can't change later: credentials derive from it).
    #[arg(long)]
    name: String,
    /// The relay's address as origins reach it (host name or IP).
    #[arg(long)]
    relay: String,
    /// An origin's name (repeat for each origin).
    #[arg(long = "origin", required = true)]
    origins: Vec<String>,
    /// `reverse` (the relay listens; origins dial) or `direct`.
    #[arg(long, default_value = "reverse")]
    mode: String,
    /// A profile: `tls:PORT` or `ws:PORT:PATH[:HOST]` (repeat, up to 8). Default
    /// `tls:7443`.
    #[arg(long = "profile")]
    profiles: Vec<String>,
    /// Links per origin per profile address.
    #[arg(long, default_value_t = 4)]
    links: usize,
    /// Where to write the files.
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

/// A profile as given on the command line.
struct ProfileArg {
    port: u16,
    transport: String,
}

fn parse_profile(text: &str) -> anyhow::Result<ProfileArg> {
    let parts: Vec<&str> = text.split(':').collect();
    let port = |p: &str| {
        p.parse::<u16>()
            .with_context(|| format!("--profile {text}: {p:?} is not a port"))
    };
    match parts.as_slice() {
        ["tls", p] => Ok(ProfileArg {
            port: port(p)?,
            transport: String::new(),
        }),
        ["ws", p, path] | ["ws", p, path, _] if path.starts_with('/') => {
            let host = parts.get(3).copied().unwrap_or_default();
            Ok(ProfileArg {
                port: port(p)?,
                transport: format!(
                    "transport = {{ type = \"ws\", path = \"{path}\", host = \"{host}\" }}\n"
                ),
            })
        }
        _ => bail!("--profile {text}: expected tls:PORT or ws:PORT:/PATH[:HOST]"),
    }
}

fn secret() -> anyhow::Result<TunnelSecret> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading 32 random bytes from /dev/urandom")?;
    Ok(TunnelSecret(bytes))
}

impl Init {
    fn run(self) -> anyhow::Result<()> {
        if self.mode != "reverse" {
            bail!(
                "--mode {}: only reverse is available in this build",
                self.mode
            );
        }
        let profiles: Vec<ProfileArg> = if self.profiles.is_empty() {
            vec![parse_profile("tls:7443")?]
        } else {
            self.profiles
                .iter()
                .map(|p| parse_profile(p))
                .collect::<anyhow::Result<_>>()?
        };
        if profiles.len() > 8 {
            bail!("a tunnel has at most 8 profiles");
        }
        std::fs::create_dir_all(&self.out)
            .with_context(|| format!("creating {}", self.out.display()))?;
        let secret = secret()?;
        let cert = issue(&self.name).context("issuing the tunnel certificate")?;
        let file = |ext: &str| self.out.join(format!("{}.{ext}", self.name));
        std::fs::write(file("crt"), &cert.cert_pem)?;
        write_private(&file("key"), cert.key_pem.as_bytes())?;
        let hex: String = secret.0.iter().map(|b| format!("{b:02x}")).collect();
        write_private(&file("secret"), hex.as_bytes())?;

        let mut profile_text = String::new();
        for p in &profiles {
            let _ = write!(
                profile_text,
                "[[tunnels.profiles]]\nport = {}\n{}addresses = [\"{}:{}\"]\n",
                p.port, p.transport, self.relay, p.port
            );
        }
        let head = format!(
            "# Tunnel {name:?} ({tag}), written by `switchyard tunnel init`.\n[[tunnels]]\nname = \"{name}\"\nlinks = {links}\n{profile_text}",
            name = self.name,
            tag = tunnel_tag(&self.name),
            links = self.links,
        );
        let mut relay = format!(
            "{head}[tunnels.relay]\ncert = \"{}\"\nkey = \"{}\"\n",
            file("crt").display(),
            file("key").display()
        );
        for origin in &self.origins {
            let c = origin_credential(&secret, &self.name, origin);
            let _ = write!(
                relay,
                "[[tunnels.relay.origins]]\nname = \"{origin}\"\ncredential = \"{}\"\n",
                c.to_hex()
            );
            let snippet = format!(
                "{head}[tunnels.origin]\nname = \"{origin}\"\ncredential = \"{}\"\npin = \"{}\"\n",
                c.to_hex(),
                cert.pin
            );
            write_private(
                &self.out.join(format!("origin-{origin}.toml")),
                snippet.as_bytes(),
            )?;
        }
        write_private(&self.out.join("relay.toml"), relay.as_bytes())?;
        println!(
            "tunnel {:?} ({}): wrote relay.toml, {} origin snippet(s), the certificate, its key and the secret in {}",
            self.name,
            tunnel_tag(&self.name),
            self.origins.len(),
            self.out.display()
        );
        Ok(())
    }
}

/// Writes a file only its owner can read (keys, credentials).
fn write_private(path: &std::path::Path, data: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    std::io::Write::write_all(&mut f, data).with_context(|| format!("writing {}", path.display()))
}
