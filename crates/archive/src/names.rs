//! Remote names are never reused.
//!
//! A capture session that restarts may close a file under a local name it
//! used before (the first `flows.ipfix` was archived and deleted, so the
//! name is free again on disk). Uploading it under the same remote name
//! would replace the archived copy. The queue therefore remembers every
//! remote name it ever assigned (table `names`), and a new file asking for
//! a taken name gets the first free variant `stem~N.rest` (`N` ≥ 2, inserted
//! before the first `.` of the last path component): `flows.ipfix` →
//! `flows~2.ipfix`, and its metadata `flows.ipfix.json` → `flows~2.ipfix.json`,
//! so a file and its metadata keep matching names. Capture itself never
//! writes `~`, so a variant never collides with a name a session chooses.
//!
//! The same rule covers a remote object the queue does not know about (its
//! state directory was lost, or someone else wrote there): a target that
//! finds different content under the name reports it, and the job moves to
//! the next free variant; nothing remote is ever replaced.

use rusqlite::{Connection, OptionalExtension};

/// `name` as (directory with its `/`, stem, rest): the stem ends at the
/// first `.` of the last path component (a leading dot, as in a hidden
/// file, belongs to the stem).
fn split(name: &str) -> (&str, &str, &str) {
    let base_at = name.rfind('/').map_or(0, |i| i + 1);
    let (dir, base) = name.split_at(base_at);
    let end = base
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '.')
        .map_or(base.len(), |(i, _)| i);
    (dir, &base[..end], &base[end..])
}

/// The `n`-th variant of `name` (`n` ≥ 2): `~n` inserted before the first
/// `.` of the last path component, or appended when it has none.
pub(crate) fn variant(name: &str, n: u32) -> String {
    let (dir, stem, rest) = split(name);
    format!("{dir}{stem}~{n}{rest}")
}

/// Records every name held by a file of the queue (migration of queues
/// written before names were recorded).
pub(crate) const BACKFILL: &str =
    "INSERT OR IGNORE INTO names (remote_name) SELECT remote_name FROM files;
     INSERT OR IGNORE INTO names (remote_name) SELECT remote_name FROM jobs
         WHERE remote_name IS NOT NULL;";

/// Claims `wanted` if no file ever had it, else its first free variant;
/// returns the name claimed (recorded, so never handed out again).
pub(crate) fn claim(c: &Connection, wanted: &str) -> rusqlite::Result<String> {
    let taken = |name: &str| -> rusqlite::Result<bool> {
        c.query_row("SELECT 1 FROM names WHERE remote_name = ?1", [name], |_| {
            Ok(())
        })
        .optional()
        .map(|r| r.is_some())
    };
    let mut name = wanted.to_string();
    let mut n = 2;
    while taken(&name)? {
        name = variant(wanted, n);
        n += 1;
    }
    c.execute("INSERT INTO names (remote_name) VALUES (?1)", [&name])?;
    Ok(name)
}

/// The name `name` was derived from (`flows~3.ipfix` → `flows.ipfix`), so
/// that a second conflict moves on to the next variant of the original
/// rather than to `flows~3~2.ipfix`.
pub(crate) fn original(name: &str) -> String {
    let (dir, stem, rest) = split(name);
    match stem.rsplit_once('~') {
        Some((s, n)) if !s.is_empty() && n.parse::<u32>().is_ok_and(|n| n >= 2) => {
            format!("{dir}{s}{rest}")
        }
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_keep_file_and_metadata_paired() {
        assert_eq!(variant("e/s/flows.ipfix", 2), "e/s/flows~2.ipfix");
        assert_eq!(variant("e/s/flows.ipfix.json", 2), "e/s/flows~2.ipfix.json");
        assert_eq!(variant("a.b/noext", 3), "a.b/noext~3");
        assert_eq!(variant(".hidden.x", 2), ".hidden~2.x");
        for n in ["e/s/flows~2.ipfix", "e/s/flows~2.ipfix.json", "a.b/noext~3"] {
            assert!(!original(n).contains('~'), "{n}");
        }
        assert_eq!(original("e/s/flows~2.ipfix.xml"), "e/s/flows.ipfix.xml");
        assert_eq!(original("x~1.pcap"), "x~1.pcap");
    }

    #[test]
    fn claimed_names_are_never_handed_out_twice() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE names (remote_name TEXT PRIMARY KEY)")
            .unwrap();
        let got: Vec<String> = (0..4).map(|_| claim(&c, "s/f.pcap").unwrap()).collect();
        assert_eq!(got, ["s/f.pcap", "s/f~2.pcap", "s/f~3.pcap", "s/f~4.pcap"]);
        assert_eq!(claim(&c, "s/g.pcap").unwrap(), "s/g.pcap");
    }
}
