//! A source row's cells, read one by one: each checked, and a value that does not
//! fit named by table, row and column (the readers of every SQLite source share
//! this).

use sqlx::{ColumnIndex, Decode, Row, Type};

use super::{Field, ImportError};

/// The cells of `row` (of SQLite, or of another database whose queries cast every
/// value to text or a 64-bit integer), the row `id` of `table`.
pub(super) struct Cells<'r, R> {
    row: &'r R,
    table: &'static str,
    id: i64,
}

impl<'r, R> Cells<'r, R>
where
    R: Row,
    usize: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    pub(super) fn new(row: &'r R, table: &'static str, id: i64) -> Self {
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

/// Unix ms of a naive UTC time as SQLAlchemy stores it in SQLite:
/// `2026-12-04 15:48:17.805931` (fraction optional, `T` allowed, and a UTC offset,
/// `+00:00` or `Z`, as a zone-aware column may hold it).
pub(super) fn datetime_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    let text = text
        .strip_suffix("+00:00")
        .or_else(|| text.strip_suffix("+00"))
        .or_else(|| text.strip_suffix('Z'))
        .unwrap_or(text);
    let (date, clock) = text.split_once([' ', 'T'])?;
    let mut d = date.splitn(3, '-');
    let year: i32 = d.next()?.parse().ok()?;
    let month: u8 = d.next()?.parse().ok()?;
    let day: u8 = d.next()?.parse().ok()?;
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut t = hms.splitn(3, ':');
    let hour: u8 = t.next()?.parse().ok()?;
    let minute: u8 = t.next()?.parse().ok()?;
    let second: u8 = t.next()?.parse().ok()?;
    let micros: u32 = if fraction.is_empty() {
        0
    } else {
        let digits: String = fraction.chars().take(6).collect();
        if !digits.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        format!("{digits:0<6}").parse().ok()?
    };
    let date =
        time::Date::from_calendar_date(year, time::Month::try_from(month).ok()?, day).ok()?;
    let clock = time::Time::from_hms_micro(hour, minute, second, micros).ok()?;
    let at = time::PrimitiveDateTime::new(date, clock).assume_utc();
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlalchemy_times_are_read_as_utc() {
        assert_eq!(datetime_ms("1970-01-01 00:00:01"), Some(1000));
        assert_eq!(
            datetime_ms("2026-12-04 15:48:17.805931"),
            Some(1_796_399_297_805)
        );
        assert_eq!(
            datetime_ms("2026-12-04T15:48:17.8"),
            Some(1_796_399_297_800)
        );
        assert_eq!(datetime_ms("2026-13-04 15:48:17"), None);
        assert_eq!(datetime_ms("2026-12-04 15:48:17.x"), None);
        assert_eq!(datetime_ms("1970-01-01 00:00:01+00:00"), Some(1000));
        assert_eq!(datetime_ms("1970-01-01T00:00:01Z"), Some(1000));
        // PostgreSQL's text of a time with zone, in UTC.
        assert_eq!(
            datetime_ms("2026-12-04 15:48:17.805931+00"),
            Some(1_796_399_297_805)
        );
        assert_eq!(datetime_ms("1970-01-01 00:00:01+03:00"), None);
        assert_eq!(datetime_ms("yesterday"), None);
        assert_eq!(datetime_ms(""), None);
    }
}
