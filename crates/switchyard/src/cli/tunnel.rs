//! `switchyard tunnel init`: a tunnel for operators who run nodes without the panel.

use std::fmt::Write as _;
use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use switchyard_panel::model::inbound::is_grpc_service_name;
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
    /// An origin: `NAME` or, for direct mode, `NAME@HOST` (repeat for each origin).
    #[arg(long = "origin", required = true)]
    origins: Vec<String>,
    /// `reverse` (the relay listens; origins dial) or `direct`.
    #[arg(long, default_value = "reverse")]
    mode: String,
    /// A profile: `tls:PORT`, `ws:PORT:/PATH[:HOST]`, `httpupgrade:PORT:/PATH[:HOST]`,
    /// `xhttp:PORT:/PATH[:HOST]` or `grpc:PORT:SERVICE[:HOST]` (repeat, up to 8).
    /// Default `tls:7443`.
    #[arg(long = "profile")]
    profiles: Vec<String>,
    /// Links per origin per profile (spread over the profile's addresses).
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
        [kind @ ("ws" | "httpupgrade" | "xhttp"), p, path]
        | [kind @ ("ws" | "httpupgrade" | "xhttp"), p, path, _]
            if path.starts_with('/')
                && plain(path)
                && parts.get(3).is_none_or(|h| plain(h))
                && !(*kind == "xhttp" && path.contains(['?', '#'])) =>
        {
            let host = parts.get(3).copied().unwrap_or_default();
            Ok(ProfileArg {
                port: port(p)?,
                transport: format!(
                    "transport = {{ type = \"{kind}\", path = \"{path}\", host = \"{host}\" }}\n"
                ),
            })
        }
        ["grpc", p, service] | ["grpc", p, service, _]
            if is_grpc_service_name(service) && parts.get(3).is_none_or(|h| plain(h)) =>
        {
            let host = parts.get(3).copied().unwrap_or_default();
            Ok(ProfileArg {
                port: port(p)?,
                transport: format!(
                    "transport = {{ type = \"grpc\", service_name = \"{service}\", host = \"{host}\" }}\n"
                ),
            })
        }
        _ => bail!(
            "--profile {text}: expected tls:PORT, ws:PORT:/PATH[:HOST], httpupgrade:PORT:/PATH[:HOST], \
             xhttp:PORT:/PATH[:HOST] (no ? or # in the path) or grpc:PORT:SERVICE[:HOST] \
             (SERVICE: 1 to 128 letters, digits, _ . -)"
        ),
    }
}

/// A path or host the config's TOML string holds as it is: no quote, backslash,
/// space or control character.
fn plain(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '"' || c == '\\')
}

fn secret() -> anyhow::Result<TunnelSecret> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading 32 random bytes from /dev/urandom")?;
    Ok(TunnelSecret(bytes))
}

impl Init {
    /// The origins as `(name, host)`; direct mode needs every host.
    fn origins(&self, direct: bool) -> anyhow::Result<Vec<(String, Option<String>)>> {
        let mut origins = Vec::new();
        for o in &self.origins {
            let (name, host) = o
                .split_once('@')
                .map_or((o.as_str(), None), |(n, h)| (n, Some(h)));
            if name.is_empty() {
                bail!("--origin {o}: the name is empty");
            }
            if direct && host.is_none_or(str::is_empty) {
                bail!("--origin {o}: direct mode needs NAME@HOST (the relay dials the origin)");
            }
            origins.push((name.to_owned(), host.map(str::to_owned)));
        }
        Ok(origins)
    }

    fn run(self) -> anyhow::Result<()> {
        let direct = match self.mode.as_str() {
            "reverse" => false,
            "direct" => true,
            other => bail!("--mode {other}: expected reverse or direct"),
        };
        let origins = self.origins(direct)?;
        let profiles: Vec<ProfileArg> = if self.profiles.is_empty() {
            vec![parse_profile("tls:7443")?]
        } else {
            self.profiles
                .iter()
                .map(|p| parse_profile(p))
                .collect::<anyhow::Result<_>>()?
        };
        if profiles.len() > switchyard_node::config::MAX_PROFILES {
            bail!(
                "a tunnel has at most {} profiles",
                switchyard_node::config::MAX_PROFILES
            );
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
                "[[tunnels.profiles]]\nport = {}\n{}",
                p.port, p.transport
            );
            if !direct {
                let _ = writeln!(profile_text, "addresses = [\"{}:{}\"]", self.relay, p.port);
            }
        }
        let head = format!(
            "# Tunnel {name:?} ({tag}), written by `switchyard tunnel init`.\n[[tunnels]]\nname = \"{name}\"\nmode = \"{mode}\"\nlinks = {links}\n{profile_text}",
            name = self.name,
            tag = tunnel_tag(&self.name),
            mode = self.mode,
            links = self.links,
        );
        let (crt, key) = (
            file("crt").display().to_string(),
            file("key").display().to_string(),
        );
        let mut relay = if direct {
            format!("{head}[tunnels.relay]\npin = \"{}\"\n", cert.pin)
        } else {
            format!("{head}[tunnels.relay]\ncert = \"{crt}\"\nkey = \"{key}\"\n")
        };
        for (origin, host) in &origins {
            let c = origin_credential(&secret, &self.name, origin);
            let _ = write!(
                relay,
                "[[tunnels.relay.origins]]\nname = \"{origin}\"\ncredential = \"{}\"\n",
                c.to_hex()
            );
            if let Some(host) = host.as_ref().filter(|_| direct) {
                let _ = writeln!(relay, "host = \"{host}\"");
            }
            let half = if direct {
                format!("cert = \"{crt}\"\nkey = \"{key}\"\n")
            } else {
                format!("pin = \"{}\"\n", cert.pin)
            };
            let snippet = format!(
                "{head}[tunnels.origin]\nname = \"{origin}\"\ncredential = \"{}\"\n{half}",
                c.to_hex()
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
            origins.len(),
            self.out.display()
        );
        Ok(())
    }
}

/// Writes a file only its owner can read (keys, credentials): `0600` even when an
/// older, wider file was there, replaced atomically and synced.
fn write_private(path: &std::path::Path, data: &[u8]) -> anyhow::Result<()> {
    switchyard_node::state::write_atomic(path, data)
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile's snippet as the node reads it (its validation included).
    fn node_reads(profile: &ProfileArg) -> Result<(), String> {
        let text = format!(
            "[[tunnels]]\nname = \"eu\"\n[[tunnels.profiles]]\nport = {}\n{}\
             addresses = [\"relay.example.org:{}\"]\n[tunnels.origin]\nname = \"fi\"\n\
             credential = \"{}\"\npin = \"cert:{}\"\n",
            profile.port,
            profile.transport,
            profile.port,
            "ab".repeat(32),
            "cd".repeat(32),
        );
        switchyard_node::NodeConfig::from_toml(&text)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_profile_form_gives_a_config_the_node_reads() {
        for text in [
            "tls:7443",
            "ws:8080:/eu",
            "httpupgrade:8081:/eu-up:cdn.example.org",
            "xhttp:8082:/eu-xh",
            "xhttp:8083:/eu-xh:cdn.example.org",
            "grpc:8084:eu.Tunnel",
            "grpc:8085:eu.Tunnel-2_b:cdn.example.org",
        ] {
            let p = parse_profile(text).unwrap_or_else(|e| panic!("{text}: {e:#}"));
            assert_eq!(node_reads(&p), Ok(()), "{text}: {}", p.transport);
        }
        let p = parse_profile("grpc:8084:eu.Tunnel:cdn.example.org").unwrap();
        assert_eq!(
            p.transport,
            "transport = { type = \"grpc\", service_name = \"eu.Tunnel\", host = \"cdn.example.org\" }\n"
        );
    }

    #[test]
    fn a_bad_profile_is_refused_naming_it() {
        for text in [
            "udp:1",
            "xhttp:8082:eu-xh",
            "xhttp:8082:/eu?x=1",
            "xhttp:8082:/eu#x",
            "xhttp:8082",
            "grpc:8084:",
            "grpc:8084:eu/Tunnel",
            "grpc:8084:/eu",
            "ws:8080:/e\"u",
            "grpc:8084:eu:cdn example",
            "xhttp:x:/eu",
        ] {
            let e = format!(
                "{:#}",
                parse_profile(text)
                    .err()
                    .unwrap_or_else(|| panic!("{text}"))
            );
            assert!(e.contains(&format!("--profile {text}")), "{text}: {e}");
        }
    }
}
