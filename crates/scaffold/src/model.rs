//! The application description, whichever form it was read from (the
//! Ruby-dialect DSL or TOML): plain data with the source location of every
//! name and type, so that checks done after parsing still point at the line
//! and column a person has to fix.

use std::fmt;

/// A place in a description file (1-based line and column, in characters).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// File name as given by the caller (shown in messages).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// A value with the place it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// Where it was written.
    pub loc: Location,
}

impl<T> Located<T> {
    /// Wraps `value` written at `loc`.
    pub fn new(value: T, loc: Location) -> Self {
        Located { value, loc }
    }
}

/// One of the OML field types a description can name, after the deprecated
/// aliases are resolved (`:float`/`:real` → double, `:flag` → boolean; `:int`
/// and `:integer` are resolved at generation time, see [`IntAlias`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricType {
    /// `:int32`.
    Int32,
    /// `:uint32`.
    UInt32,
    /// `:int64`.
    Int64,
    /// `:uint64`.
    UInt64,
    /// `:double` (also `:float`, `:real`).
    Double,
    /// `:string`.
    String,
    /// `:blob`.
    Blob,
    /// `:guid`.
    Guid,
    /// `:boolean` (also `:flag`).
    Boolean,
    /// `:long`, deprecated: a C `long` sent as OML_LONG_VALUE (stored as int32).
    Long,
    /// `:vector_double`.
    VecDouble,
    /// `:vector_int32`.
    VecInt32,
    /// `:vector_uint32`.
    VecUInt32,
    /// `:vector_int64`.
    VecInt64,
    /// `:vector_uint64`.
    VecUInt64,
    /// `:vector_bool`.
    VecBool,
}

impl MetricType {
    /// Every canonical type, in the order the documentation lists them.
    pub const ALL: [MetricType; 16] = [
        MetricType::Int32,
        MetricType::UInt32,
        MetricType::Int64,
        MetricType::UInt64,
        MetricType::Double,
        MetricType::String,
        MetricType::Blob,
        MetricType::Guid,
        MetricType::Boolean,
        MetricType::Long,
        MetricType::VecDouble,
        MetricType::VecInt32,
        MetricType::VecUInt32,
        MetricType::VecInt64,
        MetricType::VecUInt64,
        MetricType::VecBool,
    ];

    /// The canonical name written in descriptions (`int32`, `vector_bool`, …).
    pub fn name(self) -> &'static str {
        match self {
            MetricType::Int32 => "int32",
            MetricType::UInt32 => "uint32",
            MetricType::Int64 => "int64",
            MetricType::UInt64 => "uint64",
            MetricType::Double => "double",
            MetricType::String => "string",
            MetricType::Blob => "blob",
            MetricType::Guid => "guid",
            MetricType::Boolean => "boolean",
            MetricType::Long => "long",
            MetricType::VecDouble => "vector_double",
            MetricType::VecInt32 => "vector_int32",
            MetricType::VecUInt32 => "vector_uint32",
            MetricType::VecInt64 => "vector_int64",
            MetricType::VecUInt64 => "vector_uint64",
            MetricType::VecBool => "vector_bool",
        }
    }

    /// Whether this is one of the `vector_*` types.
    pub fn is_vector(self) -> bool {
        matches!(
            self,
            MetricType::VecDouble
                | MetricType::VecInt32
                | MetricType::VecUInt32
                | MetricType::VecInt64
                | MetricType::VecUInt64
                | MetricType::VecBool
        )
    }

    /// Whether a generated helper takes a `<name>_len` after this argument.
    pub fn has_length(self) -> bool {
        self == MetricType::Blob || self.is_vector()
    }

    /// Whether a command-line option (a property) can have this type.
    pub fn is_property_type(self) -> bool {
        !(self == MetricType::Blob || self == MetricType::Guid || self.is_vector())
    }
}

/// How `:int` and `:integer` are resolved (`-i/--int32`, the default, or
/// `-l/--long`), as the reference generator does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IntAlias {
    /// `:int`/`:integer` mean `:int32`.
    #[default]
    Int32,
    /// `:int`/`:integer` mean the deprecated `:long`.
    Long,
}

/// A type as written: a known type, or the integer alias resolved later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclType {
    /// A type with one meaning.
    Known(MetricType),
    /// `:int` or `:integer`.
    Int,
}

impl DeclType {
    /// Reads a type name as a description may write it, aliases included.
    /// `bool` is not a type (the reference rejects it too).
    pub fn from_name(name: &str) -> Option<DeclType> {
        let known = match name {
            "float" | "real" => MetricType::Double,
            "flag" => MetricType::Boolean,
            "int" | "integer" => return Some(DeclType::Int),
            other => *MetricType::ALL.iter().find(|t| t.name() == other)?,
        };
        Some(DeclType::Known(known))
    }

    /// The type this resolves to under `alias`.
    pub fn resolve(self, alias: IntAlias) -> MetricType {
        match (self, alias) {
            (DeclType::Known(t), _) => t,
            (DeclType::Int, IntAlias::Int32) => MetricType::Int32,
            (DeclType::Int, IntAlias::Long) => MetricType::Long,
        }
    }
}

/// A typed field written as a name, its type name as written, and the
/// resolved type.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeRef {
    /// The type name exactly as written (`int`, `float`, `uint64`, …), kept so
    /// conversions and warnings can repeat what the author wrote.
    pub written: Located<String>,
    /// What it means.
    pub decl: DeclType,
}

impl TypeRef {
    /// Stands for a type already reported as wrong, so that reading can go
    /// on: `string` raises no further error (a valid metric and property
    /// type, with no length argument).
    pub fn placeholder(loc: &Location) -> TypeRef {
        TypeRef {
            written: Located::new("string".to_owned(), loc.clone()),
            decl: DeclType::Known(MetricType::String),
        }
    }
}

/// One field of a measurement point (`mp.defMetric`).
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Field name.
    pub name: Located<String>,
    /// Field type.
    pub ty: TypeRef,
    /// Optional description (third argument of `defMetric`).
    pub description: Option<String>,
    /// Optional unit (`:unit => '…'`).
    pub unit: Option<String>,
}

/// A measurement point (`app.defMeasurement`).
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// MP name (the table is `<app>_<mp>`).
    pub name: Located<String>,
    /// Its fields, in order.
    pub metrics: Vec<Metric>,
}

/// A literal default value of a property, as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// A string (`'1.0'`; the reference writes defaults as strings).
    Str(String),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
}

/// A command-line option of the application (`app.defProperty`).
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// Property name (`defProperty`'s first argument).
    pub name: Located<String>,
    /// Help text.
    pub description: String,
    /// The parameter as written (`-x`, `--name`), if any.
    pub parameter: Option<String>,
    /// Long option, without dashes.
    pub long_name: String,
    /// Short option letter.
    pub short_name: Option<char>,
    /// `:mnemonic` (also popt's `val`, returned by `poptGetNextOpt`).
    pub mnemonic: Option<char>,
    /// Option type.
    pub ty: TypeRef,
    /// `:unit`, shown as popt's argument description.
    pub unit: Option<String>,
    /// `:default`.
    pub default: Option<Located<Literal>>,
    /// Name of the variable holding the value (`:var_name`, else the name
    /// with `-` replaced by `_`).
    pub var_name: Located<String>,
}

/// Application version (`app.version(MAJOR, MINOR = 0, REV = 0)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// Major.
    pub major: String,
    /// Minor.
    pub minor: String,
    /// Revision.
    pub revision: String,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.revision)
    }
}

/// A whole application description (`defApplication`).
#[derive(Debug, Clone, PartialEq)]
pub struct App {
    /// URI (`$USER:app:name` by convention).
    pub uri: String,
    /// Name (defaults to the last `:`-separated part of the URI); the
    /// generated file names start with it.
    pub name: Located<String>,
    /// `app.version(…)`.
    pub version: Option<Version>,
    /// `app.shortDescription = …`.
    pub short_description: Option<String>,
    /// `app.description = …`.
    pub description: Option<String>,
    /// `app.path = …` (the Makefile installs there).
    pub path: Option<String>,
    /// Command-line options.
    pub properties: Vec<Property>,
    /// Measurement points.
    pub measurements: Vec<Measurement>,
}

impl App {
    /// The name as a C identifier (`-` becomes `_`), used in the global
    /// `g_oml_mps_<app>` and the include guards.
    pub fn c_name(&self) -> String {
        self.name.value.replace('-', "_")
    }

    /// The version as `major.minor.revision` (`0.0.0` if not given).
    pub fn version_string(&self) -> String {
        self.version
            .as_ref()
            .map_or_else(|| "0.0.0".to_owned(), Version::to_string)
    }
}

/// A remark about a valid but outdated description (deprecated type, the
/// pre-OMF-5.4 `defProperty` form), shown to the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    /// Where.
    pub loc: Location,
    /// What, and what to write instead.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: warning: {}", self.loc, self.message)
    }
}

/// The long option and short letter of a property, as the reference derives
/// them: `--long` in the parameter gives the long option, `-x` the short
/// one; the long option defaults to the property name and the short one to
/// the mnemonic.
pub fn option_names(
    name: &str,
    parameter: Option<&str>,
    mnemonic: Option<char>,
) -> (String, Option<char>) {
    let mut long = None;
    let mut short = None;
    if let Some(p) = parameter {
        if let Some(l) = p.strip_prefix("--") {
            long = Some(l.to_owned());
        } else if let Some(s) = p.strip_prefix('-') {
            short = s.chars().next();
        }
    }
    (long.unwrap_or_else(|| name.to_owned()), short.or(mnemonic))
}
