//! The SQLite file: private to the panel's user, and migrated with foreign keys off.
//!
//! - The database holds every secret the panel has (inbound keys, users' credentials,
//!   token hashes): it is created `0600` before SQLite opens it, and an existing one
//!   (and its `-wal`/`-shm`) is made `0600` at every start. SQLite gives the `-wal` and
//!   `-shm` files it creates the database file's mode, so they are `0600` too.
//! - Version 11 rebuilds every table (create, copy, drop, rename). A `DROP TABLE` with
//!   foreign keys on deletes the rows first, cascading into the children, and SQLite
//!   ignores `PRAGMA foreign_keys` inside a transaction (sqlx runs each migration in
//!   one): so migrations run with foreign keys off on the writer's one connection, and
//!   then `PRAGMA foreign_key_check` says whether every reference still holds.

use std::fs::OpenOptions;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sqlx::{AnyPool, Row};

use super::StoreError;

/// The file a `sqlite://` URL names; none for an in-memory database.
pub(super) fn path_of(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && !path.starts_with(":memory:")).then(|| PathBuf::from(path))
}

/// Creates the database file of `url` `0600` when it is missing, and makes it and its
/// `-wal`/`-shm` `0600` when they exist.
pub(super) fn restrict(url: &str) -> Result<(), StoreError> {
    let Some(path) = path_of(url) else {
        return Ok(());
    };
    let fail = |path: &Path| {
        let path = path.to_owned();
        move |source| StoreError::File { path, source }
    };
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .map_err(fail(&path))?;
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.clone().into_os_string();
        name.push(suffix);
        let file = PathBuf::from(name);
        match std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !suffix.is_empty() => {}
            Err(e) => return Err(fail(&file)(e)),
        }
    }
    Ok(())
}

/// Runs `migrator` on the writer's connection with foreign keys off, then checks them
/// and turns them back on. A broken reference (only a database edited by hand can have
/// one: the panel always writes with foreign keys on) is logged, not fatal.
pub(super) async fn migrate(
    write: &AnyPool,
    migrator: &sqlx::migrate::Migrator,
) -> Result<(), StoreError> {
    let mut conn = write.acquire().await?;
    sqlx::query("PRAGMA foreign_keys = OFF")
        .execute(&mut *conn)
        .await?;
    let ran = migrator.run(&mut *conn).await;
    let broken = sqlx::query("PRAGMA foreign_key_check")
        .fetch_all(&mut *conn)
        .await;
    sqlx::query("PRAGMA foreign_keys = ON")
        .execute(&mut *conn)
        .await?;
    ran?;
    for r in broken? {
        let table: String = r.try_get(0).unwrap_or_default();
        let parent: String = r.try_get(2).unwrap_or_default();
        tracing::warn!(
            table,
            parent,
            "a row refers to a missing parent (the database was edited by hand?)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_of_a_url() {
        assert_eq!(
            path_of("sqlite:///var/lib/x/panel.db?mode=rwc"),
            Some(PathBuf::from("/var/lib/x/panel.db"))
        );
        assert_eq!(path_of("sqlite://rel.db"), Some(PathBuf::from("rel.db")));
        assert_eq!(path_of("sqlite::memory:"), None);
        assert_eq!(path_of("postgres://x"), None);
    }
}
