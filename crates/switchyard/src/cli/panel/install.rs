//! `switchyard panel install`: runs this machine's panel as a systemd service (a
//! system user, its config file and data directory, a hardened unit), then prints
//! where it answers and the first admin's login; `switchyard panel uninstall` removes
//! the service and keeps the data unless told otherwise.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use clap::Args;
use switchyard_panel::PanelConfig;

use crate::cli::service::{self, PANEL, PANEL_CONFIG, say};

/// Install the panel as a service on this machine (as root). Again: repairs, keeps
/// the config and the data.
#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// The API and web UI's listener, written into a new config file (default
    /// 127.0.0.1:2053: put a TLS reverse proxy in front, or open it on purpose).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// The URL operators and users reach the panel at, written into a new config file
    /// (subscription links, install commands).
    #[arg(long)]
    public_url: Option<String>,
}

/// Remove the panel's service (as root); its data stays unless --delete-data.
#[derive(Debug, Args)]
pub(crate) struct UninstallArgs {
    /// Also delete the database and the config file: every server, user and
    /// subscription the panel knows.
    #[arg(long)]
    delete_data: bool,
}

/// The config file's text for these settings.
fn config_text(listen: Option<SocketAddr>, public_url: Option<&str>) -> String {
    let mut text = String::from(
        "# Written by `switchyard panel install`; every field and its default: docs/panel.md.\n",
    );
    if let Some(l) = listen {
        text.push_str(&format!("listen = \"{l}\"\n"));
    }
    if let Some(u) = public_url {
        text.push_str(&format!("public_url = {}\n", toml_string(u)));
    }
    text
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl InstallArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        service::must_be_root()?;
        let config_path = Path::new(PANEL_CONFIG);
        if config_path.exists() {
            say(format_args!("kept {PANEL_CONFIG}"));
            if self.listen.is_some() || self.public_url.is_some() {
                say("--listen and --public-url apply to a new config file only: edit it instead");
            }
        } else {
            let text = config_text(self.listen, self.public_url.as_deref());
            std::fs::create_dir_all("/etc/switchyard").context("creating /etc/switchyard")?;
            service::write_if_changed(config_path, &text)?;
            say(format_args!("wrote {PANEL_CONFIG}"));
        }
        // Refuse a config the panel would refuse, before anything starts.
        let mut config = PanelConfig::load(Some(config_path))
            .with_context(|| format!("{PANEL_CONFIG} is not a valid panel config"))?;
        config.data_dir = PANEL.state_dir();
        let bin = service::place_binary()?;
        service::ensure_user()?;
        let dir = PANEL.state_dir();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        service::chown_to_user(&dir)?;
        if !service::has_systemd() {
            service::say_no_systemd(&PANEL);
            return Ok(());
        }
        service::start_unit(&PANEL, &bin)?;
        say(format_args!(
            "the panel runs at {} (node channel on {}); its log: journalctl -u {} -f",
            config.public_base(),
            config.channel.listen,
            PANEL.name
        ));
        let password = dir.join(switchyard_panel::run::PASSWORD_FILE);
        // A fresh panel writes the first admin's password as it starts.
        for _ in 0..50 {
            if password.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        match std::fs::read_to_string(&password) {
            Ok(p) => say(format_args!(
                "first admin: admin / {} (in {}; change it after logging in)",
                p.trim(),
                password.display()
            )),
            Err(_) => say("no first admin password file: log in with your own account"),
        }
        Ok(())
    }
}

impl UninstallArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        service::must_be_root()?;
        service::remove_unit(&PANEL)?;
        let dir = PANEL.state_dir();
        if self.delete_data {
            if dir.exists() {
                std::fs::remove_dir_all(&dir)
                    .with_context(|| format!("removing {}", dir.display()))?;
                say(format_args!("deleted {}", dir.display()));
            }
            if service::remove_file(Path::new(PANEL_CONFIG))? {
                say(format_args!("deleted {PANEL_CONFIG}"));
            }
            let _ = std::fs::remove_dir("/etc/switchyard");
        } else {
            say(format_args!(
                "kept the data in {} and {PANEL_CONFIG} (--delete-data deletes them)",
                dir.display()
            ));
        }
        service::remove_shared(&service::NODE)?;
        say("done: the panel's service is removed");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_file_holds_what_was_given_and_reads_back() {
        let text = config_text(
            Some("0.0.0.0:2053".parse().unwrap()),
            Some("https://p.example.org/\"x"),
        );
        assert_eq!(
            text,
            "# Written by `switchyard panel install`; every field and its default: docs/panel.md.\n\
             listen = \"0.0.0.0:2053\"\npublic_url = \"https://p.example.org/\\\"x\"\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("panel.toml");
        std::fs::write(&file, &text).unwrap();
        let back = PanelConfig::load(Some(&file)).unwrap();
        assert_eq!(
            back.public_url.as_deref(),
            Some("https://p.example.org/\"x")
        );
        assert_eq!(back.listen, "0.0.0.0:2053".parse().unwrap());
        assert_eq!(config_text(None, None).lines().count(), 1);
    }
}
