//! A source panel's database on a server (MySQL, MariaDB or PostgreSQL, named by
//! URL) or in a file (SQLite), read by one reader per panel: each query spells its
//! casts with `{text}` and `{int}` (every value read as text or a 64-bit integer, so
//! one reading serves every database) and its one parameter as `{p1}`; a server's
//! database is read in one read-only transaction, so the panel can keep running.

use std::str::FromStr;
use std::time::Duration;

use sqlx::{Connection, Row};

use super::ImportError;

/// `url` without its password: `mysql://HOST:PORT/DB`.
pub fn describe(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "the database URL".to_owned();
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let rest = rest.split_once('?').map_or(rest, |(r, _)| r);
    format!("{scheme}://{rest}")
}

/// Reads the source at `$url` with `$read_from` (a reader generic over [`Fetch`],
/// given the [`Dialect`]) in one read-only transaction on the server the URL names
/// (MySQL or MariaDB when `mysql`, PostgreSQL when `postgres`); a database that is
/// not `$panel`'s is said so, naming the database without its password.
macro_rules! read_on_server {
    ($url:expr, $read_from:ident, $panel:literal, mysql: $mysql:expr, postgres: $pg:expr) => {{
        use $crate::import::source_db::{Dialect, Server, describe, not_it};
        let url: &str = $url;
        let open = |source| ImportError::Database {
            database: describe(url),
            source,
        };
        let read = $crate::import::source_db::READ_DEADLINE;
        let (source, server) = match Server::connect(url, $mysql, $pg).await? {
            Server::MySql(mut c) => (
                tokio::time::timeout(read, $read_from(&mut c, Dialect::MySql, &open)).await,
                Server::MySql(c),
            ),
            Server::Postgres(mut c) => (
                tokio::time::timeout(read, $read_from(&mut c, Dialect::Postgres, &open)).await,
                Server::Postgres(c),
            ),
        };
        let source = source
            .map_err(|_| open($crate::import::source_db::timed_out("reading it", read)))?
            .map_err(|e| not_it(e, url, $panel))?;
        server.close(url).await?;
        Ok(source)
    }};
}
pub(super) use read_on_server;

/// Reads the source in the SQLite file `$path` with `$read_from`, the file opened
/// read-only; a file that is not `$panel`'s database is said so.
macro_rules! read_in_file {
    ($path:expr, $read_from:ident, $panel:literal) => {{
        use sqlx::Connection as _;
        use $crate::import::source_db::{Dialect, not_the_file};
        let path: &std::path::Path = $path;
        let open = |source| ImportError::Open {
            path: path.to_owned(),
            source,
        };
        let mut c = $crate::import::open_read_only(path).await?;
        let source = $read_from(&mut c, Dialect::Sqlite, &open)
            .await
            .map_err(|e| not_the_file(e, path, $panel))?;
        c.close().await.map_err(open)?;
        Ok(source)
    }};
}
pub(super) use read_in_file;

/// A reader's "this is not the source's database", for a database named by URL.
pub(super) fn not_it(e: ImportError, url: &str, panel: &str) -> ImportError {
    match e {
        ImportError::Missing { why } => ImportError::Database {
            database: describe(url),
            source: sqlx::Error::Protocol(format!("{why}: not a {panel} database")),
        },
        other => other,
    }
}

/// A reader's "this is not the source's database", for a file.
pub(super) fn not_the_file(
    e: ImportError,
    path: &std::path::Path,
    panel: &'static str,
) -> ImportError {
    match e {
        ImportError::Missing { why } => ImportError::NotTheSource {
            path: path.to_owned(),
            source_panel: panel,
            why,
        },
        other => other,
    }
}

/// How long connecting to a source's database server may take (an address that
/// does not answer is an error, not a hung import).
pub(super) const CONNECT_DEADLINE: Duration = Duration::from_secs(30);
/// How long reading a source's database server may take, all of it.
pub(super) const READ_DEADLINE: Duration = Duration::from_secs(15 * 60);

/// The error of `what` not done within `deadline`.
pub(super) fn timed_out(what: &str, deadline: Duration) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("{what} took longer than {} s", deadline.as_secs()),
    ))
}

/// The most rows a listing reads (admins, nodes, inbounds, services, a user's
/// proxies): a hostile database does not fill the memory.
pub(super) const MAX_LISTED: usize = 10_000;

/// How a database spells what the queries need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dialect {
    Sqlite,
    MySql,
    Postgres,
}

impl Dialect {
    /// The SQL with `{text}` and `{int}` as this database casts to text and to a
    /// 64-bit integer, `{p1}` as its first parameter and `{listed}` as the bound of
    /// a listing ([`MAX_LISTED`] rows).
    pub(super) fn sql(self, sql: &str) -> String {
        let (text, int, p1) = match self {
            Self::Sqlite => ("TEXT", "INTEGER", "?1"),
            Self::MySql => ("CHAR", "SIGNED", "?"),
            Self::Postgres => ("TEXT", "BIGINT", "$1"),
        };
        sql.replace("{text}", text)
            .replace("{int}", int)
            .replace("{p1}", p1)
            .replace("{listed}", &format!("LIMIT {MAX_LISTED}"))
    }

    /// A query listing the database's tables (one text column).
    pub(super) fn tables(self) -> &'static str {
        match self {
            Self::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table'",
            Self::MySql => {
                "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
                 WHERE table_schema = DATABASE()"
            }
            Self::Postgres => {
                "SELECT CAST(table_name AS TEXT) FROM information_schema.tables \
                 WHERE table_schema = current_schema()"
            }
        }
    }

    /// A query listing the columns of the table named by its parameter.
    pub(super) fn columns(self) -> &'static str {
        match self {
            Self::Sqlite => "SELECT name FROM pragma_table_info(?1)",
            Self::MySql => {
                "SELECT CAST(column_name AS CHAR) FROM information_schema.columns \
                 WHERE table_schema = DATABASE() AND table_name = ?"
            }
            Self::Postgres => {
                "SELECT CAST(column_name AS TEXT) FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1"
            }
        }
    }
}

/// A parameter of a query.
#[derive(Clone, Copy, Debug)]
pub(super) enum Bind<'a> {
    Int(i64),
    Text(&'a str),
}

/// Runs a query on a source database, with at most one parameter.
pub(super) trait Fetch {
    type Row: Row;
    async fn all(
        &mut self,
        sql: &str,
        bind: Option<Bind<'_>>,
    ) -> Result<Vec<Self::Row>, sqlx::Error>;
}

macro_rules! fetch {
    ($conn:ty, $row:ty) => {
        impl Fetch for $conn {
            type Row = $row;
            async fn all(
                &mut self,
                sql: &str,
                bind: Option<Bind<'_>>,
            ) -> Result<Vec<Self::Row>, sqlx::Error> {
                let q = sqlx::query(sql);
                match bind {
                    Some(Bind::Int(b)) => q.bind(b).fetch_all(self).await,
                    Some(Bind::Text(b)) => q.bind(b).fetch_all(self).await,
                    None => q.fetch_all(self).await,
                }
            }
        }
    };
}

fetch!(sqlx::SqliteConnection, sqlx::sqlite::SqliteRow);
fetch!(sqlx::MySqlConnection, sqlx::mysql::MySqlRow);
fetch!(sqlx::PgConnection, sqlx::postgres::PgRow);

/// The text values of the first column of `rows`.
pub(super) fn texts<R: Row>(rows: &[R]) -> Vec<String>
where
    usize: sqlx::ColumnIndex<R>,
    String: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    rows.iter()
        .filter_map(|r| r.try_get::<String, _>(0).ok())
        .collect()
}

/// A source's database server, connected, inside one read-only transaction.
pub(super) enum Server {
    MySql(sqlx::MySqlConnection),
    Postgres(sqlx::PgConnection),
}

impl Server {
    /// Connects to `url` (`mysql://` or `mariadb://`, `postgres://` or
    /// `postgresql://`, as `schemes` allows) and starts a read-only transaction on
    /// one consistent snapshot; errors name the database without its password.
    pub(super) async fn connect(
        url: &str,
        mysql: bool,
        postgres: bool,
    ) -> Result<Self, ImportError> {
        let open = |source| ImportError::Database {
            database: describe(url),
            source,
        };
        tokio::time::timeout(CONNECT_DEADLINE, Self::begin(url, mysql, postgres))
            .await
            .map_err(|_| open(timed_out("connecting", CONNECT_DEADLINE)))?
    }

    async fn begin(url: &str, mysql: bool, postgres: bool) -> Result<Self, ImportError> {
        let database = describe(url);
        let open = |source| ImportError::Database {
            database: database.clone(),
            source,
        };
        if mysql && (url.starts_with("mysql://") || url.starts_with("mariadb://")) {
            let url = url.replacen("mariadb://", "mysql://", 1);
            let options = sqlx::mysql::MySqlConnectOptions::from_str(&url).map_err(open)?;
            let mut c = sqlx::MySqlConnection::connect_with(&options)
                .await
                .map_err(open)?;
            sqlx::query("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
                .execute(&mut c)
                .await
                .map_err(open)?;
            return Ok(Self::MySql(c));
        }
        if postgres && (url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            let options = sqlx::postgres::PgConnectOptions::from_str(url).map_err(open)?;
            let mut c = sqlx::PgConnection::connect_with(&options)
                .await
                .map_err(open)?;
            // Times as text in UTC (`…+00`), in one snapshot.
            for sql in [
                "SET TIME ZONE 'UTC'",
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
            ] {
                sqlx::query(sql).execute(&mut c).await.map_err(open)?;
            }
            return Ok(Self::Postgres(c));
        }
        let schemes = match (mysql, postgres) {
            (true, true) => "mysql://, mariadb://, postgres:// or postgresql://",
            (true, false) => "mysql:// or mariadb://",
            _ => "postgres:// or postgresql://",
        };
        Err(open(sqlx::Error::Configuration(
            format!("the URL must start with {schemes}").into(),
        )))
    }

    /// Ends the transaction (nothing was written) and the connection.
    pub(super) async fn close(self, url: &str) -> Result<(), ImportError> {
        let open = |source| ImportError::Database {
            database: describe(url),
            source,
        };
        match self {
            Self::MySql(mut c) => {
                sqlx::query("ROLLBACK")
                    .execute(&mut c)
                    .await
                    .map_err(open)?;
                c.close().await.map_err(open)
            }
            Self::Postgres(mut c) => {
                sqlx::query("ROLLBACK")
                    .execute(&mut c)
                    .await
                    .map_err(open)?;
                c.close().await.map_err(open)
            }
        }
    }
}

/// A server on 127.0.0.1 that takes connections and never answers: its port, and
/// the task holding them (abort it to let them go).
#[cfg(test)]
pub(super) async fn silent_server() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            kept.push(socket);
        }
    });
    (port, held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_database_gets_its_own_spelling() {
        let q = "SELECT CAST(a AS {text}), CAST(b AS {int}) FROM t WHERE c = {p1}";
        assert_eq!(
            Dialect::MySql.sql("SELECT x FROM t {listed}"),
            "SELECT x FROM t LIMIT 10000"
        );
        assert_eq!(
            Dialect::Sqlite.sql(q),
            "SELECT CAST(a AS TEXT), CAST(b AS INTEGER) FROM t WHERE c = ?1"
        );
        assert_eq!(
            Dialect::MySql.sql(q),
            "SELECT CAST(a AS CHAR), CAST(b AS SIGNED) FROM t WHERE c = ?"
        );
        assert_eq!(
            Dialect::Postgres.sql(q),
            "SELECT CAST(a AS TEXT), CAST(b AS BIGINT) FROM t WHERE c = $1"
        );
    }

    /// A server on 127.0.0.1 that takes the connection and never answers: the import
    /// ends at the deadline, naming the database without its password.
    #[tokio::test(start_paused = true)]
    async fn a_server_that_does_not_answer_is_an_error_not_a_hung_import() {
        let (port, held) = silent_server().await;
        for (url, mysql) in [
            (format!("mysql://u:s3cret@127.0.0.1:{port}/db"), true),
            (format!("postgres://u:s3cret@127.0.0.1:{port}/db"), false),
        ] {
            let started = tokio::time::Instant::now();
            let Err(e) = Server::connect(&url, mysql, !mysql).await else {
                panic!("{url}: connected to nothing")
            };
            assert_eq!(started.elapsed(), CONNECT_DEADLINE, "{url}");
            let scheme = url.split_once("://").unwrap().0;
            assert_eq!(
                e.to_string(),
                format!(
                    "{scheme}://127.0.0.1:{port}/db: error communicating with database: \
                     connecting took longer than 30 s"
                )
            );
        }
        held.abort();
    }

    #[test]
    fn a_url_is_described_without_its_password() {
        assert_eq!(
            describe("mysql://marzban:s3cret@db.example:3306/marzban?ssl-mode=required"),
            "mysql://db.example:3306/marzban"
        );
        assert_eq!(describe("no url"), "the database URL");
    }
}
