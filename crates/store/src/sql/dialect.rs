//! The parameter syntax of each back end. Statements are written once, with
//! SQLite's numbered placeholders `?N`; PostgreSQL's are `$N`.

use std::borrow::Cow;

/// Which SQL flavour a statement is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite: placeholders `?1`, `?2`, …
    Sqlite,
    /// PostgreSQL: placeholders `$1`, `$2`, …
    Postgres,
}

impl Dialect {
    /// The placeholder of parameter `n` (numbered from 1).
    pub fn placeholder(self, n: usize) -> String {
        match self {
            Dialect::Sqlite => format!("?{n}"),
            Dialect::Postgres => format!("${n}"),
        }
    }

    /// `sql`, written with SQLite's `?N`, in this dialect: for PostgreSQL,
    /// each `?` followed by a digit becomes `$`, except inside quoted text
    /// (`'…'`) and quoted identifiers (`"…"`); a doubled quote inside them
    /// stays inside. Any other `?` (a lone one, `??`, PostgreSQL's `?|`
    /// operators) is left alone, so `??1` becomes `?$1`.
    ///
    /// Comments, `E'…'` strings and dollar quoting are not recognised: a
    /// quote inside a comment would hide the placeholders after it, so
    /// statements given here carry no comments.
    pub fn rewrite_placeholders(self, sql: &str) -> Cow<'_, str> {
        match self {
            Dialect::Sqlite => Cow::Borrowed(sql),
            Dialect::Postgres => Cow::Owned(dollar_placeholders(sql)),
        }
    }
}

/// `?N` → `$N` outside quoted text and identifiers.
fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                out.push(c);
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) => out.push('$'),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_per_dialect() {
        assert_eq!(Dialect::Sqlite.placeholder(1), "?1");
        assert_eq!(Dialect::Postgres.placeholder(12), "$12");
    }

    #[test]
    fn sqlite_text_is_kept_as_written() {
        let sql = "SELECT ?1 WHERE '?2' = \"?3\"";
        assert!(matches!(
            Dialect::Sqlite.rewrite_placeholders(sql),
            Cow::Borrowed(s) if s == sql
        ));
    }

    /// Statements written with `?N`, and what PostgreSQL gets.
    const REWRITES: &[(&str, &str)] = &[
        // Numbered placeholders, also past ?9.
        ("x = ?1 AND y = ?2", "x = $1 AND y = $2"),
        ("(?9,?10,?11,?123)", "($9,$10,$11,$123)"),
        ("?1", "$1"),
        ("é=?1", "é=$1"),
        // Quoted text and identifiers are left alone.
        (
            "SELECT '?1', \"a?2\" FROM t WHERE x = ?1",
            "SELECT '?1', \"a?2\" FROM t WHERE x = $1",
        ),
        // Doubled quotes stay inside the string or identifier.
        ("'it''s ?1' || ?2", "'it''s ?1' || $2"),
        ("\"a\"\"?1\" = ?2", "\"a\"\"?1\" = $2"),
        // Each kind of quote ends only its own kind.
        ("'\"?1' = ?2", "'\"?1' = $2"),
        ("\"'?1\" = ?2", "\"'?1\" = $2"),
        // An unterminated quote runs to the end.
        ("?1 'open ?2", "$1 'open ?2"),
        // A `?` not followed by a digit is not a numbered placeholder.
        ("z ? 3", "z ? 3"),
        ("d ?| array['a']", "d ?| array['a']"),
        ("??", "??"),
        ("??1", "?$1"),
        ("?a ?", "?a ?"),
        ("x = ?", "x = ?"),
    ];

    #[test]
    fn numbered_placeholders_become_dollars_outside_quotes() {
        for (written, postgres) in REWRITES {
            assert_eq!(
                Dialect::Postgres.rewrite_placeholders(written),
                *postgres,
                "{written}"
            );
        }
    }
}
