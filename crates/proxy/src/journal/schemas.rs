//! Streams declared after the header (through schema 0, spec §6.3), kept
//! so that a resumed upstream header can declare them again (spec §3.6).
//!
//! File `schemas`: one line per declaration, `<end> <schema>`, where `end`
//! is the data offset just after the declaring tuple. A torn last line
//! (no LF) is ignored: the data holding that declaration was not journaled
//! yet, since declarations are written before their data.

use std::io::Write;
use std::path::Path;

use omsp::{Header, Schema};

/// One schema-0 declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    /// Data offset just after the declaring tuple.
    pub end: u64,
    /// The declared schema (with its index).
    pub schema: Schema,
}

/// Parses the file's text (a torn or unparsable last line is dropped).
pub fn decode(text: &str) -> Vec<Declaration> {
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    complete
        .lines()
        .filter_map(|line| {
            let (end, schema) = line.split_once(' ')?;
            Some(Declaration {
                end: end.parse().ok()?,
                schema: Schema::parse(schema).ok()?,
            })
        })
        .collect()
}

/// One line of the file.
pub fn encode(d: &Declaration) -> String {
    format!("{} {}\n", d.end, d.schema)
}

/// Loads `dir/schemas` (missing: none).
pub fn load(dir: &Path) -> std::io::Result<Vec<Declaration>> {
    match std::fs::read_to_string(dir.join("schemas")) {
        Ok(t) => Ok(decode(&t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Appends declarations to `dir/schemas`.
pub fn append(dir: &Path, decls: &[Declaration], sync: bool) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("schemas"))?;
    let text: String = decls.iter().map(encode).collect();
    f.write_all(text.as_bytes())?;
    if sync {
        f.sync_data()?;
    }
    Ok(())
}

/// Rewrites `dir/schemas` with `decls` (after recovery cut the data).
pub fn rewrite(dir: &Path, decls: &[Declaration]) -> std::io::Result<()> {
    let tmp = dir.join("schemas.tmp");
    let text: String = decls.iter().map(encode).collect();
    std::fs::write(&tmp, text)?;
    std::fs::File::open(&tmp)?.sync_data()?;
    std::fs::rename(tmp, dir.join("schemas"))
}

/// Binds every declaration that ends at or before `upto` into `header`,
/// in order (a later declaration of an index replaces an earlier one).
pub fn apply(header: &mut Header, decls: &[Declaration], upto: u64) {
    for d in decls.iter().filter(|d| d.end <= upto) {
        match header
            .schemas
            .iter_mut()
            .find(|s| s.index == d.schema.index)
        {
            Some(s) => *s = d.schema.clone(),
            None => header.schemas.push(d.schema.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_last_line_is_ignored_and_apply_rebinds() {
        let text = "10 2 a_b x:int32\n20 2 a_c y:double\n30 3 a_d z:str";
        let d = decode(text);
        assert_eq!(d.len(), 2);
        let mut h = Header::new("d", "s", "a", 0, omsp::Content::Text);
        h.schemas.push(Schema::parse("1 a_a v:int32").unwrap());
        apply(&mut h, &d, 15);
        assert_eq!(h.schemas.len(), 2);
        apply(&mut h, &d, 25);
        assert_eq!(h.schemas[1].to_string(), "2 a_c y:double");
    }
}
