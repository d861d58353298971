//! A source row's cells, read one by one: each checked, and a value that does not
//! fit named by table, row and column (the readers of every SQLite source share
//! this).

use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::marzban::datetime_ms;
use super::{Field, ImportError};

/// The cells of `row`, the row `id` of `table`.
pub(super) struct Cells<'r> {
    row: &'r SqliteRow,
    table: &'static str,
    id: i64,
}

impl<'r> Cells<'r> {
    pub(super) fn new(row: &'r SqliteRow, table: &'static str, id: i64) -> Self {
        Self { row, table, id }
    }

    /// An error naming `field` of this row.
    pub(super) fn error(&self, field: &'static str, message: String) -> ImportError {
        Field {
            table: self.table,
            row: self.id,
            field,
        }
        .error(message)
    }

    /// Column `i`, text or none.
    pub(super) fn text(
        &self,
        i: usize,
        field: &'static str,
    ) -> Result<Option<String>, ImportError> {
        self.row
            .try_get(i)
            .map_err(|e| self.error(field, e.to_string()))
    }

    /// Column `i`, an integer or none.
    pub(super) fn number(&self, i: usize, field: &'static str) -> Result<Option<i64>, ImportError> {
        self.row
            .try_get(i)
            .map_err(|e| self.error(field, e.to_string()))
    }

    /// Column `i`, a boolean as SQLite keeps one (none: false).
    pub(super) fn flag(&self, i: usize, field: &'static str) -> Result<bool, ImportError> {
        Ok(self.number(i, field)?.unwrap_or(0) != 0)
    }

    /// Column `i`, a count of bytes: never negative.
    pub(super) fn bytes(&self, i: usize, field: &'static str) -> Result<Option<u64>, ImportError> {
        self.number(i, field)?
            .map(|n| u64::try_from(n).map_err(|_| self.error(field, format!("{n} is negative"))))
            .transpose()
    }

    /// Column `i`, a time as SQLAlchemy keeps one, in Unix ms.
    pub(super) fn time(&self, i: usize, field: &'static str) -> Result<Option<i64>, ImportError> {
        self.text(i, field)?
            .map(|t| {
                datetime_ms(&t).ok_or_else(|| self.error(field, format!("{t:?} is not a date")))
            })
            .transpose()
    }
}
