//! The shape of a description, before meaning is given to it: statements
//! that are method calls (`recv.method(args) do |p| … end`, parentheses
//! optional) or attribute assignments (`recv.attr = value`), whose arguments
//! are literals, symbols, arrays and hashes (`:k => v` or `k: v`).

use super::lexer::{Tok, Token};
use crate::error::DescriptionError;
use crate::model::Location;

/// A literal argument.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `'…'`, `"…"`, `%{…}` (adjacent literals and `+` concatenated).
    Str(String),
    /// `:name`.
    Sym(String),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// `nil`.
    Nil,
    /// `{ k => v, … }` or a trailing `k: v, …` argument list.
    Hash(Vec<(Node, Node)>),
    /// `[a, b]`.
    Array(Vec<Node>),
}

/// An expression and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The expression.
    pub expr: Expr,
    /// Where it starts.
    pub loc: Location,
}

/// `do |param| … end` or `{ |param| … }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The block parameter (`app`, `mp`), if written.
    pub param: Option<(String, Location)>,
    /// The statements inside.
    pub body: Vec<Stmt>,
}

/// One statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// `recv.method(args) block`.
    Call {
        /// `recv`, if any.
        receiver: Option<(String, Location)>,
        /// Method name and where it is written.
        method: (String, Location),
        /// Arguments; a trailing `k => v` list is one [`Expr::Hash`].
        args: Vec<Node>,
        /// The block, if any.
        block: Option<Block>,
    },
    /// `recv.attr = value`.
    Assign {
        /// `recv`.
        receiver: (String, Location),
        /// Attribute name and location.
        attr: (String, Location),
        /// The value.
        value: Node,
    },
}

/// Reads the statements of a whole file.
pub fn parse_program(tokens: &[Token]) -> Result<Vec<Stmt>, DescriptionError> {
    let mut p = Parser {
        toks: tokens,
        pos: 0,
    };
    let body = p.statements()?;
    match &p.peek().tok {
        Tok::Eof => Ok(body),
        _ => Err(p.unexpected("a statement")),
    }
}

struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(&self.peek().tok, Tok::Punct(q) if *q == p)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(q) if q == w)
    }

    fn expect_punct(&mut self, p: &str) -> Result<Location, DescriptionError> {
        if self.is_punct(p) {
            Ok(self.next().loc)
        } else {
            Err(self.unexpected(&format!("`{p}`")))
        }
    }

    fn skip_newlines(&mut self) {
        while self.peek().tok == Tok::Newline {
            self.next();
        }
    }

    fn unexpected(&self, wanted: &str) -> DescriptionError {
        let t = self.peek();
        let found = match &t.tok {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Symbol(s) => format!("`:{s}`"),
            Tok::Label(s) => format!("`{s}:`"),
            Tok::Str(_) => "a string".to_owned(),
            Tok::Int(i) => format!("`{i}`"),
            Tok::Float(f) => format!("`{f}`"),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Newline => "the end of the line".to_owned(),
            Tok::Eof => "the end of the file".to_owned(),
        };
        DescriptionError::new(&t.loc, format!("expected {wanted}, found {found}"))
    }

    /// Statements up to `end`, `}` or the end of the file.
    fn statements(&mut self) -> Result<Vec<Stmt>, DescriptionError> {
        let mut out = Vec::new();
        loop {
            self.skip_newlines();
            if self.peek().tok == Tok::Eof || self.is_word("end") || self.is_punct("}") {
                return Ok(out);
            }
            out.push(self.statement()?);
            match &self.peek().tok {
                Tok::Newline | Tok::Eof => {}
                Tok::Ident(w) if w == "end" => {}
                Tok::Punct("}") => {}
                _ => return Err(self.unexpected("the end of the statement")),
            }
        }
    }

    fn name(&mut self) -> Result<(String, Location), DescriptionError> {
        match &self.peek().tok {
            Tok::Ident(s) => {
                let s = s.clone();
                Ok((s, self.next().loc))
            }
            _ => Err(self.unexpected("a method name")),
        }
    }

    fn statement(&mut self) -> Result<Stmt, DescriptionError> {
        let first = self.name()?;
        let (receiver, method) = if self.is_punct(".") {
            self.next();
            (Some(first), self.name()?)
        } else {
            (None, first)
        };
        if self.is_punct("=") {
            let Some(receiver) = receiver else {
                return Err(DescriptionError::new(
                    &method.1,
                    format!("assignment to the variable `{}` is not supported; only `app.attribute = value` is", method.0),
                ));
            };
            self.next();
            self.skip_newlines();
            let value = self.expr()?;
            return Ok(Stmt::Assign {
                receiver,
                attr: method,
                value,
            });
        }
        let args = if self.is_punct("(") {
            self.next();
            self.args(true)?
        } else if self.starts_bare_args() {
            self.args(false)?
        } else {
            Vec::new()
        };
        let block = self.block()?;
        Ok(Stmt::Call {
            receiver,
            method,
            args,
            block,
        })
    }

    fn starts_bare_args(&self) -> bool {
        match &self.peek().tok {
            Tok::Newline | Tok::Eof => false,
            Tok::Ident(w) => !matches!(w.as_str(), "do" | "end"),
            Tok::Punct(p) => matches!(*p, "[" | "-"),
            _ => true,
        }
    }

    /// Arguments up to `)` (`parens`) or the end of the line.
    fn args(&mut self, parens: bool) -> Result<Vec<Node>, DescriptionError> {
        let mut args = Vec::new();
        let mut hash: Option<Node> = None;
        loop {
            if parens {
                self.skip_newlines();
                if self.is_punct(")") {
                    self.next();
                    break;
                }
            }
            let start = self.peek().loc.clone();
            if let Tok::Label(k) = &self.peek().tok {
                let key = Node {
                    expr: Expr::Sym(k.clone()),
                    loc: start.clone(),
                };
                self.next();
                self.skip_newlines();
                let v = self.expr()?;
                push_pair(&mut hash, key, v, start);
            } else {
                let e = self.expr()?;
                if self.is_punct("=>") {
                    self.next();
                    self.skip_newlines();
                    let v = self.expr()?;
                    push_pair(&mut hash, e, v, start);
                } else if let Some(h) = &hash {
                    return Err(DescriptionError::new(
                        &e.loc,
                        format!(
                            "a plain argument after the options that start at {}; put options last",
                            h.loc
                        ),
                    ));
                } else {
                    args.push(e);
                }
            }
            if self.is_punct(",") {
                self.next();
                continue;
            }
            if parens {
                self.skip_newlines();
                self.expect_punct(")")?;
            }
            break;
        }
        args.extend(hash);
        Ok(args)
    }

    fn block(&mut self) -> Result<Option<Block>, DescriptionError> {
        let closer = if self.is_word("do") {
            "end"
        } else if self.is_punct("{") {
            "}"
        } else {
            return Ok(None);
        };
        self.next();
        let param = if self.is_punct("|") {
            self.next();
            let p = self.name()?;
            self.expect_punct("|")?;
            Some(p)
        } else {
            None
        };
        let body = self.statements()?;
        let done = if closer == "end" {
            self.is_word("end")
        } else {
            self.is_punct("}")
        };
        if !done {
            return Err(self.unexpected(&format!("`{closer}` closing the block")));
        }
        self.next();
        Ok(Some(Block { param, body }))
    }

    /// A literal, `+`-joined strings included.
    fn expr(&mut self) -> Result<Node, DescriptionError> {
        let mut node = self.primary()?;
        while self.is_punct("+") || matches!(self.peek().tok, Tok::Str(_)) {
            if self.is_punct("+") {
                self.next();
                self.skip_newlines();
            }
            let rhs = self.primary()?;
            match (&mut node.expr, rhs.expr) {
                (Expr::Str(a), Expr::Str(b)) => a.push_str(&b),
                _ => {
                    return Err(DescriptionError::new(
                        &rhs.loc,
                        "only strings can be joined with `+`",
                    ))
                }
            }
        }
        Ok(node)
    }

    fn primary(&mut self) -> Result<Node, DescriptionError> {
        let t = self.peek().clone();
        let expr = match t.tok {
            Tok::Str(s) => Expr::Str(s),
            Tok::Symbol(s) => Expr::Sym(s),
            Tok::Int(i) => Expr::Int(i),
            Tok::Float(f) => Expr::Float(f),
            Tok::Ident(w) if w == "nil" => Expr::Nil,
            Tok::Ident(w) if w == "true" => Expr::Bool(true),
            Tok::Ident(w) if w == "false" => Expr::Bool(false),
            Tok::Punct("-") => {
                self.next();
                let n = self.peek().clone();
                let expr = match n.tok {
                    Tok::Int(i) => Expr::Int(-i),
                    Tok::Float(f) => Expr::Float(-f),
                    _ => return Err(self.unexpected("a number after `-`")),
                };
                self.next();
                return Ok(Node { expr, loc: t.loc });
            }
            Tok::Punct("{") => return self.hash(),
            Tok::Punct("[") => return self.array(),
            Tok::Ident(w) => {
                return Err(DescriptionError::new(
                    &t.loc,
                    format!("`{w}` is a variable or method call; descriptions take literal values only (strings, numbers, symbols, true/false/nil)"),
                ))
            }
            _ => return Err(self.unexpected("a value")),
        };
        self.next();
        Ok(Node { expr, loc: t.loc })
    }

    fn hash(&mut self) -> Result<Node, DescriptionError> {
        let loc = self.expect_punct("{")?;
        let mut pairs = Vec::new();
        loop {
            self.skip_newlines();
            if self.is_punct("}") {
                self.next();
                break;
            }
            let key = if let Tok::Label(k) = &self.peek().tok {
                let key = Node {
                    expr: Expr::Sym(k.clone()),
                    loc: self.peek().loc.clone(),
                };
                self.next();
                key
            } else {
                let k = self.expr()?;
                self.expect_punct("=>")?;
                k
            };
            self.skip_newlines();
            pairs.push((key, self.expr()?));
            self.skip_newlines();
            if self.is_punct(",") {
                self.next();
            } else {
                self.skip_newlines();
                self.expect_punct("}")?;
                break;
            }
        }
        Ok(Node {
            expr: Expr::Hash(pairs),
            loc,
        })
    }

    fn array(&mut self) -> Result<Node, DescriptionError> {
        let loc = self.expect_punct("[")?;
        let mut items = Vec::new();
        loop {
            self.skip_newlines();
            if self.is_punct("]") {
                self.next();
                break;
            }
            items.push(self.expr()?);
            self.skip_newlines();
            if self.is_punct(",") {
                self.next();
            } else {
                self.expect_punct("]")?;
                break;
            }
        }
        Ok(Node {
            expr: Expr::Array(items),
            loc,
        })
    }
}

fn push_pair(hash: &mut Option<Node>, key: Node, value: Node, start: Location) {
    let h = hash.get_or_insert_with(|| Node {
        expr: Expr::Hash(Vec::new()),
        loc: start,
    });
    if let Expr::Hash(pairs) = &mut h.expr {
        pairs.push((key, value));
    }
}
