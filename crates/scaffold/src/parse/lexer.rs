//! Tokens of the Ruby subset used by application descriptions: names,
//! symbols (`:int32`, `:"x"`), labels (`type:`), strings (`'…'`, `"…"`,
//! `%{…}`, `%q(…)`, `%Q[…]`), numbers, punctuation, comments (`#`,
//! `=begin`…`=end`) and line ends. Ruby code outside that subset (string
//! interpolation, heredocs, operators) is an error at its position: the
//! description is read, never executed.

use crate::error::DescriptionError;
use crate::model::Location;

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A name: `defApplication`, `app`, `do`, `end`, `nil`, `true`.
    Ident(String),
    /// A symbol, without the colon.
    Symbol(String),
    /// A hash label `name:` (Ruby 1.9 hash syntax), without the colon.
    Label(String),
    /// A string literal, escapes resolved.
    Str(String),
    /// An integer literal.
    Int(i64),
    /// A floating-point literal.
    Float(f64),
    /// One of `( ) , . = => | { } [ ] + -`.
    Punct(&'static str),
    /// End of a line or `;`.
    Newline,
    /// End of input.
    Eof,
}

/// A token and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Where it starts.
    pub loc: Location,
}

struct Lexer<'a> {
    chars: Vec<char>,
    pos: usize,
    line: usize,
    col: usize,
    file: &'a str,
}

/// Splits `text` into tokens, or reports the first character that cannot
/// start one.
pub fn tokenize(text: &str, file: &str) -> Result<Vec<Token>, DescriptionError> {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        pos: 0,
        line: 1,
        col: 1,
        file,
    };
    let mut out = Vec::new();
    loop {
        let t = lx.next_token()?;
        let end = t.tok == Tok::Eof;
        out.push(t);
        if end {
            return Ok(out);
        }
    }
}

const PUNCT: [&str; 13] = [
    "=>", "(", ")", ",", ".", "=", "|", "{", "}", "[", "]", "+", "-",
];

impl Lexer<'_> {
    fn loc(&self) -> Location {
        Location {
            file: self.file.to_owned(),
            line: self.line,
            col: self.col,
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn at_line_start(&self) -> bool {
        self.col == 1
    }

    fn rest_starts_with(&self, s: &str) -> bool {
        s.chars().enumerate().all(|(i, c)| self.peek(i) == Some(c))
    }

    fn next_token(&mut self) -> Result<Token, DescriptionError> {
        self.skip_blanks()?;
        let loc = self.loc();
        let Some(c) = self.peek(0) else {
            return Ok(Token { tok: Tok::Eof, loc });
        };
        let tok = match c {
            '\n' | ';' => {
                self.bump();
                Tok::Newline
            }
            '\'' => {
                self.bump();
                Tok::Str(self.quoted('\'', '\'', false, &loc)?)
            }
            '"' => {
                self.bump();
                Tok::Str(self.quoted('"', '"', true, &loc)?)
            }
            '%' => self.percent_string(&loc)?,
            ':' if self.peek(1) == Some('"') || self.peek(1) == Some('\'') => {
                self.bump();
                let q = self.bump().unwrap_or('"');
                Tok::Symbol(self.quoted(q, q, q == '"', &loc)?)
            }
            ':' if self.peek(1).is_some_and(is_ident_start) => {
                self.bump();
                Tok::Symbol(self.ident())
            }
            c if c.is_ascii_digit() => self.number(&loc)?,
            c if is_ident_start(c) => {
                let name = self.ident();
                // `name:` followed by a blank is a hash label; `a::b` is not.
                if self.peek(0) == Some(':') && self.peek(1) != Some(':') {
                    self.bump();
                    Tok::Label(name)
                } else {
                    Tok::Ident(name)
                }
            }
            '<' if self.rest_starts_with("<<") => return Err(DescriptionError::new(
                &loc,
                "heredocs (<<) are not supported in descriptions; write the text as %{...} instead",
            )),
            _ => {
                let p = PUNCT.iter().find(|p| self.rest_starts_with(p)).ok_or_else(|| {
                    DescriptionError::new(
                        &loc,
                        format!("unexpected character `{c}`: descriptions are read, not run as Ruby, and only defApplication, defProperty, defMeasurement and defMetric calls with literal arguments are understood"),
                    )
                })?;
                for _ in 0..p.len() {
                    self.bump();
                }
                Tok::Punct(p)
            }
        };
        Ok(Token { tok, loc })
    }

    /// Skips spaces, tabs, comments and backslash-newline continuations.
    fn skip_blanks(&mut self) -> Result<(), DescriptionError> {
        loop {
            match self.peek(0) {
                Some(' ' | '\t' | '\r') => {
                    self.bump();
                }
                Some('\\') if self.peek(1) == Some('\n') => {
                    self.bump();
                    self.bump();
                }
                Some('#') => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                Some('=') if self.at_line_start() && self.rest_starts_with("=begin") => {
                    let loc = self.loc();
                    loop {
                        while self.peek(0).is_some_and(|c| c != '\n') {
                            self.bump();
                        }
                        if self.bump().is_none() {
                            return Err(DescriptionError::new(
                                &loc,
                                "=begin comment without a closing =end",
                            ));
                        }
                        if self.rest_starts_with("=end") {
                            while self.peek(0).is_some_and(|c| c != '\n') {
                                self.bump();
                            }
                            break;
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn ident(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek(0).filter(|c| c.is_alphanumeric() || *c == '_') {
            s.push(c);
            self.bump();
        }
        // Ruby method names may end in ? or ! (not in descriptions, but read
        // them so the error names the whole method).
        if let Some(c @ ('?' | '!')) = self.peek(0) {
            s.push(c);
            self.bump();
        }
        s
    }

    fn number(&mut self, loc: &Location) -> Result<Tok, DescriptionError> {
        let mut s = String::new();
        while let Some(c) = self
            .peek(0)
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
        {
            if c == '.' && !self.peek(1).is_some_and(|d| d.is_ascii_digit()) {
                break;
            }
            if c != '_' {
                s.push(c);
            }
            self.bump();
        }
        if let Ok(i) = s.parse::<i64>() {
            return Ok(Tok::Int(i));
        }
        s.parse::<f64>()
            .map(Tok::Float)
            .map_err(|_| DescriptionError::new(loc, format!("`{s}` is not a number")))
    }

    /// `%{…}`, `%(…)`, `%[…]`, `%<…>`, `%q…` (no escapes) and `%Q…`.
    fn percent_string(&mut self, loc: &Location) -> Result<Tok, DescriptionError> {
        self.bump();
        let mut escapes = true;
        match self.peek(0) {
            Some('q') => {
                escapes = false;
                self.bump();
            }
            Some('Q') => {
                self.bump();
            }
            _ => {}
        }
        let open = self.bump().unwrap_or(' ');
        let close =
            match open {
                '{' => '}',
                '(' => ')',
                '[' => ']',
                '<' => '>',
                c if c.is_ascii_punctuation() => c,
                _ => return Err(DescriptionError::new(
                    loc,
                    "only %{...}, %q{...} and %Q{...} literals (any bracket) are supported here",
                )),
            };
        Ok(Tok::Str(self.quoted(open, close, escapes, loc)?))
    }

    /// Reads up to the closing delimiter (nested brackets counted), the
    /// opening one already consumed. `escapes`: double-quote rules (`\n`,
    /// `\t`, …; `#{` is refused); otherwise single-quote rules (`\\`, `\'`).
    fn quoted(
        &mut self,
        open: char,
        close: char,
        escapes: bool,
        start: &Location,
    ) -> Result<String, DescriptionError> {
        let mut s = String::new();
        let mut depth = 0usize;
        loop {
            let here = self.loc();
            let Some(c) = self.bump() else {
                return Err(DescriptionError::new(
                    start,
                    format!("string is not closed (missing `{close}`)"),
                ));
            };
            match c {
                '\\' => {
                    let Some(e) = self.bump() else { continue };
                    if escapes {
                        s.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            '0' => '\0',
                            's' => ' ',
                            'e' => '\u{1b}',
                            'a' => '\u{7}',
                            '\n' => continue,
                            other => other,
                        });
                    } else if e == close || e == '\\' || e == open {
                        s.push(e);
                    } else {
                        s.push('\\');
                        s.push(e);
                    }
                }
                '#' if escapes && self.peek(0) == Some('{') => {
                    return Err(DescriptionError::new(
                        &here,
                        "string interpolation #{...} is not supported: the description is read, not executed; write the value literally",
                    ));
                }
                c if c == close && depth == 0 => return Ok(s),
                c => {
                    if open != close {
                        if c == open {
                            depth += 1;
                        } else if c == close {
                            depth -= 1;
                        }
                    }
                    s.push(c);
                }
            }
        }
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        tokenize(s, "t.rb")
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn strings_symbols_labels() {
        assert_eq!(
            toks(r#"'a\'b' "x\ty" %{n{e}st} :sym type: :"q s""#),
            vec![
                Tok::Str("a'b".into()),
                Tok::Str("x\ty".into()),
                Tok::Str("n{e}st".into()),
                Tok::Symbol("sym".into()),
                Tok::Label("type".into()),
                Tok::Symbol("q s".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn comments_and_positions() {
        let t = tokenize("# c\n=begin\nx\n=end\n  foo(1, 2.5) # tail", "t.rb").unwrap();
        let foo = t
            .iter()
            .find(|t| t.tok == Tok::Ident("foo".into()))
            .unwrap();
        assert_eq!((foo.loc.line, foo.loc.col), (5, 3));
        assert!(t.iter().any(|t| t.tok == Tok::Float(2.5)));
    }

    #[test]
    fn interpolation_is_refused_where_written() {
        let e = tokenize("x = \"a #{b}\"", "t.rb").unwrap_err();
        assert_eq!((e.loc.line, e.loc.col), (1, 8));
    }
}
