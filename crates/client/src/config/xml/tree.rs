//! Reads an XML document into a small tree of known elements, checking
//! element and attribute names against [`ELEMENTS`] as it goes (so the tree
//! is never deeper than the schema, whatever the input).

use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use super::{ElementDef, ELEMENTS};
use crate::config::error::{ConfigError, Location};
use crate::config::value;

/// One element of the configuration.
#[derive(Debug)]
pub(super) struct Node {
    /// Its definition.
    pub def: &'static ElementDef,
    /// Attributes in document order (names are from `def.attributes`).
    pub attrs: Vec<(&'static str, String)>,
    /// Child elements in document order.
    pub children: Vec<Node>,
    /// Character data (only kept for elements with `def.text`).
    pub text: String,
    /// Byte offset of the start tag.
    pub offset: usize,
}

impl Node {
    /// The value of attribute `name`, if present.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn def(name: &str) -> Option<&'static ElementDef> {
    ELEMENTS.iter().find(|d| d.name == name)
}

struct Builder<'a> {
    file: &'a str,
    text: &'a str,
    stack: Vec<Node>,
    root: Option<Node>,
}

impl Builder<'_> {
    fn loc(&self, offset: usize) -> Location {
        Location::at(self.file, self.text, offset)
    }

    fn syntax(&self, offset: usize, message: String) -> ConfigError {
        ConfigError::Syntax {
            location: self.loc(offset),
            message,
        }
    }

    /// Refuses the control characters XML 1.0 forbids, whether written
    /// raw or as a character reference such as `&#0;`.
    fn allowed(&self, s: &str, offset: usize) -> Result<(), ConfigError> {
        match value::xml_forbidden(s) {
            Some(c) => Err(self.syntax(offset, value::xml_forbidden_message(c))),
            None => Ok(()),
        }
    }

    fn open(&mut self, e: &BytesStart<'_>, offset: usize) -> Result<Node, ConfigError> {
        let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
        let def = match self.stack.last() {
            None if self.root.is_some() => {
                return Err(self.syntax(
                    offset,
                    format!(
                        "element <{name}> after the <omlc> element; a configuration has one root"
                    ),
                ))
            }
            None => match def(&name) {
                Some(d) if d.name == "omlc" => d,
                _ => {
                    return Err(ConfigError::WrongRoot {
                        location: self.loc(offset),
                        found: name,
                    })
                }
            },
            Some(parent) => match parent.def.children.iter().find(|c| **c == name) {
                Some(child) => def(child).unwrap_or(parent.def),
                None => {
                    return Err(ConfigError::UnknownElement {
                        location: self.loc(offset),
                        element: name,
                        parent: parent.def.name.to_owned(),
                        allowed: parent.def.children.to_vec(),
                    })
                }
            },
        };
        let mut attrs: Vec<(&'static str, String)> = Vec::new();
        for a in e.attributes() {
            let a = a.map_err(|err| self.syntax(offset, err.to_string()))?;
            let key = String::from_utf8_lossy(a.key.as_ref());
            let Some(known) = def.attributes.iter().find(|k| **k == key) else {
                return Err(ConfigError::UnknownAttribute {
                    location: self.loc(offset),
                    element: def.name.to_owned(),
                    attribute: key.into_owned(),
                    allowed: def.attributes.to_vec(),
                });
            };
            let value = a
                .normalized_value(XmlVersion::Implicit1_0)
                .map_err(|err| self.syntax(offset, format!("attribute `{key}`: {err}")))?;
            self.allowed(&value, offset)?;
            attrs.push((known, value.into_owned()));
        }
        Ok(Node {
            def,
            attrs,
            children: Vec::new(),
            text: String::new(),
            offset,
        })
    }

    fn close(&mut self, node: Node) {
        match self.stack.last_mut() {
            Some(parent) => parent.children.push(node),
            None => self.root = Some(node),
        }
    }

    fn text(&mut self, s: &str, offset: usize) -> Result<(), ConfigError> {
        self.allowed(s, offset)?;
        if let Some(node) = self.stack.last_mut().filter(|n| n.def.text) {
            node.text.push_str(s);
            return Ok(());
        }
        match self.stack.last() {
            _ if s.trim().is_empty() => Ok(()),
            Some(node) => {
                let mut shown: String = s.trim().chars().take(40).collect();
                if shown.len() < s.trim().len() {
                    shown.push('…');
                }
                Err(ConfigError::UnexpectedText {
                    location: self.loc(offset),
                    element: node.def.name.to_owned(),
                    text: shown,
                })
            }
            None => Err(self.syntax(offset, "text outside the <omlc> element".into())),
        }
    }
}

/// Parses `text` (named `file` in messages) into its root `<omlc>` node.
pub(super) fn read(text: &str, file: &str) -> Result<Node, ConfigError> {
    let mut reader = Reader::from_str(text);
    reader.config_mut().check_comments = true;
    let mut b = Builder {
        file,
        text,
        stack: Vec::new(),
        root: None,
    };
    loop {
        let offset = reader.buffer_position() as usize;
        let event = match reader.read_event() {
            Ok(ev) => ev,
            Err(e) => return Err(b.syntax(reader.error_position() as usize, e.to_string())),
        };
        match event {
            Event::Start(e) => {
                let node = b.open(&e, offset)?;
                b.stack.push(node);
            }
            Event::Empty(e) => {
                let node = b.open(&e, offset)?;
                b.close(node);
            }
            Event::End(_) => {
                if let Some(node) = b.stack.pop() {
                    b.close(node);
                }
            }
            Event::Text(t) => {
                let s = t
                    .xml10_content()
                    .map_err(|e| b.syntax(offset, e.to_string()))?;
                // Point at the first non-blank character.
                let blank = t.iter().take_while(|c| c.is_ascii_whitespace()).count();
                b.text(&s, offset + blank)?;
            }
            Event::CData(t) => {
                let s = t.decode().map_err(|e| b.syntax(offset, e.to_string()))?;
                b.text(&s, offset)?;
            }
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    Ok(None) => {
                        let name = r.decode().map_err(|e| b.syntax(offset, e.to_string()))?;
                        match resolve_predefined_entity(&name) {
                            Some(s) => s.to_owned(),
                            None => {
                                return Err(b.syntax(
                                    offset,
                                    format!(
                                        "unknown entity `&{name};`; only &lt; &gt; &amp; \
                                         &apos; &quot; and &#N; are known"
                                    ),
                                ))
                            }
                        }
                    }
                    Err(e) => return Err(b.syntax(offset, e.to_string())),
                };
                b.text(&resolved, offset)?;
            }
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
            Event::Eof => break,
        }
    }
    if let Some(open) = b.stack.last() {
        return Err(b.syntax(open.offset, format!("<{}> is never closed", open.def.name)));
    }
    match b.root.take() {
        Some(root) => Ok(root),
        None => Err(b.syntax(
            text.len(),
            "no <omlc> element; an OML configuration is an <omlc> element".into(),
        )),
    }
}
