//! `switchyard panel import marzban --db FILE`: brings a Marzban panel's users
//! (credentials, usage, limits, expiry, status) into this panel's database, keeping
//! their old subscription links working (`switchyard_panel::import`,
//! `docs/migration.md`). `--dry-run` first says what would happen.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use switchyard_panel::config::PanelConfig;
use switchyard_panel::store::{Changes, SqlStore};

/// Bring users from another panel.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    #[command(subcommand)]
    source: ImportSource,
}

#[derive(Debug, Subcommand)]
enum ImportSource {
    /// From Marzban (0.8): its SQLite database (`/var/lib/marzban/db.sqlite3`).
    Marzban {
        /// Marzban's SQLite database (read only; copy it off the old server first).
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        /// Marzban's `xray_config.json`: its inbounds are listed with what serves
        /// each here.
        #[arg(long, value_name = "FILE")]
        xray_config: Option<PathBuf>,
        /// Say what would happen; keep nothing.
        #[arg(long)]
        dry_run: bool,
        /// Disable users an earlier import brought that Marzban no longer has.
        #[arg(long)]
        disable_missing: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

impl ImportArgs {
    pub(crate) async fn run(self, config: PanelConfig) -> anyhow::Result<()> {
        let ImportSource::Marzban {
            db,
            xray_config,
            dry_run,
            disable_missing,
            json,
        } = self.source;
        std::fs::create_dir_all(&config.data_dir)?;
        let store = SqlStore::open(&config.database(), Changes::default()).await?;
        let now = switchyard_node::accounting::now_ms();
        let report = switchyard_panel::import::marzban(
            &store,
            &db,
            xray_config.as_deref(),
            (dry_run, disable_missing),
            now,
        )
        .await?;
        if json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{report}");
        }
        Ok(())
    }
}
