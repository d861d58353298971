//! `switchyard panel import marzban --db FILE` (or its MySQL database's URL in
//! `MARZBAN_DATABASE_URL`), `… import pasarguard --db FILE` (or its database's URL in
//! `PASARGUARD_DATABASE_URL`),
//! `… import marzneshin --db FILE` (or `MARZNESHIN_DATABASE_URL`),
//! `… import 3x-ui --db FILE` and `… import remnawave` (its PostgreSQL database's URL
//! in `REMNAWAVE_DATABASE_URL`): bring a Marzban, PasarGuard, 3x-ui or Remnawave
//! panel's users (credentials, usage, limits, expiry, status) into
//! this panel's database, keeping their old subscription links working (`switchyard_panel::import`,
//! `docs/migration.md`). `--dry-run` first says what would happen.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use switchyard_panel::config::PanelConfig;
use switchyard_panel::service::Service;
use switchyard_panel::store::{Changes, SqlStore, Store};

/// Bring users from another panel.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    #[command(subcommand)]
    source: ImportSource,
}

/// What every source takes.
#[derive(Debug, Args)]
struct Run {
    /// Say what would happen; keep nothing.
    #[arg(long)]
    dry_run: bool,
    /// Disable users an earlier import brought that the source no longer has.
    #[arg(long)]
    disable_missing: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Make the source's inbounds that a node here serves on this server (by its
    /// name here), with their ports, transports, security and REALITY keys; one
    /// whose name an inbound here already has is mapped to it.
    #[arg(long, value_name = "NAME")]
    server: Option<String>,
}

#[derive(Debug, Subcommand)]
enum ImportSource {
    /// From Marzban (0.8): its SQLite database (`/var/lib/marzban/db.sqlite3`) with
    /// `--db`, or its MySQL (or MariaDB) database, read in one read-only transaction,
    /// whose URL (`mysql://USER:PASSWORD@HOST:PORT/DB`) is read from the environment
    /// variable `MARZBAN_DATABASE_URL` when `--db` is not given.
    Marzban {
        /// Marzban's SQLite database (read only; copy it off the old server first).
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
        /// Marzban's `xray_config.json`: its inbounds are listed with what serves
        /// each here.
        #[arg(long, value_name = "FILE")]
        xray_config: Option<PathBuf>,
        #[command(flatten)]
        run: Run,
    },
    /// From PasarGuard (1.0 to 5.2): its SQLite database
    /// (`/var/lib/pasarguard/db.sqlite3`) with `--db`, or its PostgreSQL, MySQL or
    /// MariaDB database, read in one read-only transaction, whose URL
    /// (`postgres://USER:PASSWORD@HOST:PORT/DB`, `mysql://…`) is read from the
    /// environment variable `PASARGUARD_DATABASE_URL` when `--db` is not given.
    #[command(name = "pasarguard")]
    PasarGuard {
        /// PasarGuard's SQLite database (read only; copy it off the old server first).
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
        #[command(flatten)]
        run: Run,
    },
    /// From Marzneshin (0.4 to 0.7): its SQLite database
    /// (`/var/lib/marzneshin/db.sqlite3`) with `--db`, or its PostgreSQL, MySQL or
    /// MariaDB database, read in one read-only transaction, whose URL is read from
    /// the environment variable `MARZNESHIN_DATABASE_URL` when `--db` is not given.
    Marzneshin {
        /// Marzneshin's SQLite database (read only; copy it off the old server first).
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
        /// Marzneshin's `AUTH_GENERATION_ALGORITHM` (`xxh128`, its default, or
        /// `plain`): how its users' credentials come from their keys.
        #[arg(long, value_name = "ALGORITHM", default_value = "xxh128",
              value_parser = ["xxh128", "plain"])]
        auth_generation_algorithm: String,
        #[command(flatten)]
        run: Run,
    },
    /// From 3x-ui (2.x or 3.x): its SQLite database (`/etc/x-ui/x-ui.db`).
    #[command(name = "3x-ui")]
    Xui {
        /// 3x-ui's SQLite database (read only; copy it off the old server first).
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        #[command(flatten)]
        run: Run,
    },
    /// From Remnawave (2.3 to 3.3): its PostgreSQL database, read in one read-only
    /// transaction. Its URL (`postgres://USER:PASSWORD@HOST:PORT/DB`) is read from
    /// the environment variable `REMNAWAVE_DATABASE_URL`, so the password is not on
    /// the command line.
    Remnawave {
        #[command(flatten)]
        run: Run,
    },
}

/// Where `import remnawave` reads its database's URL.
const REMNAWAVE_URL_ENV: &str = "REMNAWAVE_DATABASE_URL";
/// Where `import marzban` without `--db` reads its MySQL database's URL.
const MARZBAN_URL_ENV: &str = "MARZBAN_DATABASE_URL";
/// Where `import marzneshin` without `--db` reads its database's URL.
const MARZNESHIN_URL_ENV: &str = "MARZNESHIN_DATABASE_URL";
/// Where `import pasarguard` without `--db` reads its database's URL.
const PASARGUARD_URL_ENV: &str = "PASARGUARD_DATABASE_URL";

/// The database URL in the environment variable `name`, or an error saying what to set.
fn url_from_env(name: &str, what: &str) -> anyhow::Result<String> {
    std::env::var(name).map_err(|_| anyhow::anyhow!("set {name} to {what}"))
}

impl ImportSource {
    fn run(&self) -> &Run {
        match self {
            Self::Marzban { run, .. }
            | Self::PasarGuard { run, .. }
            | Self::Marzneshin { run, .. }
            | Self::Xui { run, .. }
            | Self::Remnawave { run } => run,
        }
    }
}

impl ImportArgs {
    pub(crate) async fn run(self, config: PanelConfig) -> anyhow::Result<()> {
        std::fs::create_dir_all(&config.data_dir)?;
        let store: Arc<dyn Store> =
            Arc::new(SqlStore::open(&config.database(), Changes::default()).await?);
        let service = Service::new(store.clone());
        let store = store.as_ref();
        let now = switchyard_node::accounting::now_ms();
        if let Some(server) = self.source.run().server.as_deref() {
            switchyard_panel::import::server_named(store, server).await?;
        }
        let (mut report, run) = match self.source {
            ImportSource::Marzban {
                db,
                xray_config,
                run,
            } => {
                let flags = (run.dry_run, run.disable_missing);
                let report = match db {
                    Some(db) => {
                        switchyard_panel::import::marzban(
                            store,
                            &db,
                            xray_config.as_deref(),
                            flags,
                            now,
                        )
                        .await?
                    }
                    None => {
                        let url = url_from_env(
                            MARZBAN_URL_ENV,
                            "Marzban's MySQL database URL \
                             (mysql://USER:PASSWORD@HOST:PORT/DB), or give --db FILE",
                        )?;
                        switchyard_panel::import::marzban_url(
                            store,
                            &url,
                            xray_config.as_deref(),
                            flags,
                            now,
                        )
                        .await?
                    }
                };
                (report, run)
            }
            ImportSource::PasarGuard { db, run } => {
                let flags = (run.dry_run, run.disable_missing);
                let report = match db {
                    Some(db) => {
                        switchyard_panel::import::pasarguard(store, &db, flags, now).await?
                    }
                    None => {
                        let url = url_from_env(
                            PASARGUARD_URL_ENV,
                            "PasarGuard's database URL (postgres://USER:PASSWORD@HOST:PORT/DB \
                             or mysql://…), or give --db FILE",
                        )?;
                        switchyard_panel::import::pasarguard_url(store, &url, flags, now).await?
                    }
                };
                (report, run)
            }
            ImportSource::Marzneshin {
                db,
                auth_generation_algorithm,
                run,
            } => {
                use switchyard_panel::import::marzneshin::Auth;
                let auth = if auth_generation_algorithm == "plain" {
                    Auth::Plain
                } else {
                    Auth::Xxh128
                };
                let flags = (run.dry_run, run.disable_missing);
                let report = match db {
                    Some(db) => {
                        switchyard_panel::import::marzneshin(store, &db, auth, flags, now).await?
                    }
                    None => {
                        let url = url_from_env(
                            MARZNESHIN_URL_ENV,
                            "Marzneshin's database URL (postgres://USER:PASSWORD@HOST:PORT/DB \
                             or mysql://…), or give --db FILE",
                        )?;
                        switchyard_panel::import::marzneshin_url(store, &url, auth, flags, now)
                            .await?
                    }
                };
                (report, run)
            }
            ImportSource::Xui { db, run } => {
                let report = switchyard_panel::import::xui(
                    store,
                    &db,
                    (run.dry_run, run.disable_missing),
                    now,
                )
                .await?;
                (report, run)
            }
            ImportSource::Remnawave { run } => {
                let url = url_from_env(
                    REMNAWAVE_URL_ENV,
                    "Remnawave's database URL (postgres://USER:PASSWORD@HOST:PORT/DB)",
                )?;
                let report = switchyard_panel::import::remnawave(
                    store,
                    &url,
                    (run.dry_run, run.disable_missing),
                    now,
                )
                .await?;
                (report, run)
            }
        };
        if let Some(server) = &run.server {
            switchyard_panel::import::make_inbounds(&service, &mut report, server, now).await?;
        }
        if run.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{report}");
        }
        Ok(())
    }
}
