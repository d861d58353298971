//! One line of the journal file: `ack N` (acknowledged up to N), `read N` (handed
//! out up to N) or a record as JSON.

use super::Record;

/// What one line of the file says.
pub(super) enum Line {
    Ack(u64),
    Read(u64),
    Record(Record),
}

pub(super) fn parse_line(line: &str) -> Option<Line> {
    if let Some(n) = line.strip_prefix("ack ") {
        return n.trim().parse().ok().map(Line::Ack);
    }
    if let Some(n) = line.strip_prefix("read ") {
        return n.trim().parse().ok().map(Line::Read);
    }
    if let Ok(r) = serde_json::from_str(line) {
        return Some(Line::Record(r));
    }
    // A node before this version appended after a torn line: the record behind the
    // fragment is whole.
    let at = line.rfind("{\"seq\":").filter(|&i| i > 0)?;
    serde_json::from_str(&line[at..]).ok().map(Line::Record)
}
