//! `switchyard panel rules refresh`: the maintained lists of the split-tunnelling rule
//! sets (countries' networks from `tor-geoipdb`, ads and trackers from uBlock Origin's
//! EasyList and EasyPrivacy), from Debian packages into the panel's data directory
//! (`switchyard_panel::rule_refresh`). The running panel serves them at once.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use switchyard_panel::config::PanelConfig;
use switchyard_panel::rule_refresh;

/// The rule sets apps fetch for split tunnelling.
#[derive(Debug, Args)]
pub(crate) struct RulesArgs {
    #[command(subcommand)]
    command: RulesCommand,
}

#[derive(Debug, Subcommand)]
enum RulesCommand {
    /// Fetch the maintained lists with `apt-get download` (tor-geoipdb,
    /// webext-ublock-origin-firefox) and write them under DATA_DIR/rule-sets/maintained.
    Refresh {
        /// Read these `.deb` files instead of downloading (repeat the flag).
        #[arg(long, value_name = "FILE")]
        deb: Vec<PathBuf>,
    },
}

impl RulesArgs {
    pub(crate) fn run(self, config: &PanelConfig) -> anyhow::Result<()> {
        let RulesCommand::Refresh { deb } = self.command;
        let sets = config.data_dir.join(switchyard_panel::api::rule_sets::DIR);
        std::fs::create_dir_all(&sets).with_context(|| format!("creating {}", sets.display()))?;
        let download = tempfile::tempdir().context("creating a download directory")?;
        let debs = if deb.is_empty() {
            println!(
                "downloading {} with apt-get",
                rule_refresh::PACKAGES.join(", ")
            );
            rule_refresh::download(download.path()).context(
                "apt-get download failed: on a machine without apt, download the packages \
                 elsewhere and give them with --deb",
            )?
        } else {
            deb
        };
        let done = rule_refresh::refresh(&sets, &debs)?;
        print!("{}", done.sources);
        for (name, n) in &done.lists {
            println!("{name}: {n} entries");
        }
        println!(
            "written to {}",
            sets.join(rule_refresh::MAINTAINED).display()
        );
        Ok(())
    }
}
