//! `switchyard panel import marzban --db FILE`, `… import pasarguard --db FILE`,
//! `… import 3x-ui --db FILE` and `… import remnawave` (its PostgreSQL database's URL
//! in `REMNAWAVE_DATABASE_URL`): bring a Marzban, PasarGuard, 3x-ui or Remnawave
//! panel's users (credentials, usage, limits, expiry, status) into
//! this panel's database, keeping their old subscription links working (`switchyard_panel::import`,
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
    /// From PasarGuard (1.0 to 5.2): its SQLite database
    /// (`/var/lib/pasarguard/db.sqlite3`).
    #[command(name = "pasarguard")]
    PasarGuard {
        /// PasarGuard's SQLite database (read only; copy it off the old server first).
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        /// Say what would happen; keep nothing.
        #[arg(long)]
        dry_run: bool,
        /// Disable users an earlier import brought that PasarGuard no longer has.
        #[arg(long)]
        disable_missing: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// From 3x-ui (2.x or 3.x): its SQLite database (`/etc/x-ui/x-ui.db`).
    #[command(name = "3x-ui")]
    Xui {
        /// 3x-ui's SQLite database (read only; copy it off the old server first).
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        /// Say what would happen; keep nothing.
        #[arg(long)]
        dry_run: bool,
        /// Disable users an earlier import brought that 3x-ui no longer has.
        #[arg(long)]
        disable_missing: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// From Remnawave (2.3 to 3.3): its PostgreSQL database, read in one read-only
    /// transaction. Its URL (`postgres://USER:PASSWORD@HOST:PORT/DB`) is read from
    /// the environment variable `REMNAWAVE_DATABASE_URL`, so the password is not on
    /// the command line.
    Remnawave {
        /// Say what would happen; keep nothing.
        #[arg(long)]
        dry_run: bool,
        /// Disable users an earlier import brought that Remnawave no longer has.
        #[arg(long)]
        disable_missing: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Where `import remnawave` reads its database's URL.
const REMNAWAVE_URL_ENV: &str = "REMNAWAVE_DATABASE_URL";

impl ImportArgs {
    pub(crate) async fn run(self, config: PanelConfig) -> anyhow::Result<()> {
        std::fs::create_dir_all(&config.data_dir)?;
        let store = SqlStore::open(&config.database(), Changes::default()).await?;
        let now = switchyard_node::accounting::now_ms();
        let (report, json) = match self.source {
            ImportSource::Marzban {
                db,
                xray_config,
                dry_run,
                disable_missing,
                json,
            } => {
                let report = switchyard_panel::import::marzban(
                    &store,
                    &db,
                    xray_config.as_deref(),
                    (dry_run, disable_missing),
                    now,
                )
                .await?;
                (report, json)
            }
            ImportSource::PasarGuard {
                db,
                dry_run,
                disable_missing,
                json,
            } => {
                let report = switchyard_panel::import::pasarguard(
                    &store,
                    &db,
                    (dry_run, disable_missing),
                    now,
                )
                .await?;
                (report, json)
            }
            ImportSource::Xui {
                db,
                dry_run,
                disable_missing,
                json,
            } => {
                let report =
                    switchyard_panel::import::xui(&store, &db, (dry_run, disable_missing), now)
                        .await?;
                (report, json)
            }
            ImportSource::Remnawave {
                dry_run,
                disable_missing,
                json,
            } => {
                let url = std::env::var(REMNAWAVE_URL_ENV).map_err(|_| {
                    anyhow::anyhow!(
                        "set {REMNAWAVE_URL_ENV} to Remnawave's database URL \
                         (postgres://USER:PASSWORD@HOST:PORT/DB)"
                    )
                })?;
                let report = switchyard_panel::import::remnawave(
                    &store,
                    &url,
                    (dry_run, disable_missing),
                    now,
                )
                .await?;
                (report, json)
            }
        };
        if json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{report}");
        }
        Ok(())
    }
}
