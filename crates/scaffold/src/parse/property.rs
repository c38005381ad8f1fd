//! `defProperty`: a command-line option of the application, in the OMF
//! 5.4 form (`'-x'` or `'--name'` as parameter, options in a hash) or the
//! older one (a bare letter, or `:use_name => false` with `:impl`), which
//! is rewritten into the current form with a warning showing it.

use super::interp::{arity, key, literal, pairs, single_char, text, type_ref, unknown_key, Notes};
use super::syntax::{Expr, Node};
use crate::error::DescriptionError;
use crate::model::{option_names, Literal, Located, Location, Property, TypeRef, Warning};

type Res<T> = Result<T, DescriptionError>;

/// The options of `defProperty`, by key.
#[derive(Default)]
struct PropOpts {
    ty: Option<Node>,
    mnemonic: Option<Located<String>>,
    unit: Option<String>,
    default: Option<Located<Literal>>,
    var_name: Option<Located<String>>,
    use_name: Option<bool>,
    impl_var_name: Option<Located<String>>,
    impl_popt_val: Option<Located<Literal>>,
}

fn prop_opts(hash: Option<&Node>) -> Res<PropOpts> {
    let mut o = PropOpts::default();
    for (k, v) in pairs(hash, "defProperty options")? {
        match key(k)?.as_str() {
            "type" => o.ty = Some(v.clone()),
            "mnemonic" => o.mnemonic = Some(text(v, "`:mnemonic`")?),
            "unit" => o.unit = Some(text(v, "`:unit`")?.value),
            "default" => o.default = Some(literal(v)?),
            "var_name" => o.var_name = Some(text(v, "`:var_name`")?),
            "use_name" => match v.expr {
                Expr::Bool(b) => o.use_name = Some(b),
                _ => {
                    return Err(DescriptionError::new(
                        &v.loc,
                        "`:use_name` is true or false",
                    ))
                }
            },
            "impl" => {
                for (ik, iv) in pairs(Some(v), "`:impl`")? {
                    match key(ik)?.as_str() {
                        "var_name" => o.impl_var_name = Some(text(iv, "`:var_name`")?),
                        "popt_val" => o.impl_popt_val = Some(literal(iv)?),
                        other => return Err(unknown_key(ik, other, "var_name, popt_val")),
                    }
                }
            }
            // OMF uses these at run time; they do not change generated code.
            "dynamic" | "order" => {}
            other => {
                return Err(unknown_key(
                    k,
                    other,
                    "type, mnemonic, unit, default, var_name, use_name, impl, dynamic, order",
                ))
            }
        }
    }
    Ok(o)
}

pub(super) fn def_property(at: &Location, args: &[Node], notes: &mut Notes) -> Res<Property> {
    arity(at, "defProperty", args, 1, 4)?;
    // The options hash is the last argument, wherever the positional ones stop.
    let (positional, hash) = match args.last() {
        Some(
            n @ Node {
                expr: Expr::Hash(_),
                ..
            },
        ) => (&args[..args.len() - 1], Some(n)),
        _ => (args, None),
    };
    if positional.len() > 3 {
        return Err(DescriptionError::new(
            &positional[3].loc,
            "defProperty takes (name, description, parameter, options)",
        ));
    }
    let name = text(&positional[0], "the property name")?;
    let description = match positional.get(1) {
        Some(n) if n.expr != Expr::Nil => text(n, "the property description")?.value,
        _ => String::new(),
    };
    let parameter = match positional.get(2) {
        Some(n) if n.expr != Expr::Nil => Some(text(n, "the option parameter")?),
        _ => None,
    };
    let mut o = prop_opts(hash)?;

    let letter_form = parameter
        .as_ref()
        .is_some_and(|p| p.value.chars().count() == 1);
    let parameter = if letter_form || (parameter.is_none() && o.use_name == Some(false)) {
        old_form(&name, &description, parameter.as_ref(), &mut o, notes)
    } else {
        parameter.map(|p| p.value)
    };

    let ty = match o.ty.take() {
        Some(node) => type_ref(&node, notes)?,
        None => {
            notes.errors.push(DescriptionError::new(
                at,
                format!("property `{}` has no `:type`; add e.g. `:type => :int32` (or :boolean, :string, :uint32, :int64, :uint64, :double)", name.value),
            ));
            TypeRef::placeholder(at)
        }
    };

    let mnemonic = match &o.mnemonic {
        Some(m) => Some(single_char(m, "`:mnemonic`")?),
        None => None,
    };
    let (long_name, short_name) = option_names(&name.value, parameter.as_deref(), mnemonic);
    let var_name = o
        .var_name
        .unwrap_or_else(|| Located::new(name.value.replace('-', "_"), name.loc.clone()));
    Ok(Property {
        long_name,
        short_name,
        mnemonic,
        name,
        description,
        parameter,
        ty,
        unit: o.unit,
        default: o.default,
        var_name,
    })
}

/// The OMF ≤ 5.3 form (a bare letter as parameter, or `:use_name => false`):
/// rewritten into the current form, with a warning showing that form.
fn old_form(
    name: &Located<String>,
    description: &str,
    letter: Option<&Located<String>>,
    o: &mut PropOpts,
    notes: &mut Notes,
) -> Option<String> {
    let parameter = match letter {
        Some(l) => {
            o.mnemonic = Some(l.clone());
            format!("-{}", l.value)
        }
        None => {
            o.mnemonic = None;
            format!("--{}", name.value)
        }
    };
    if let Some(v) = o.impl_var_name.take() {
        if v.value != name.value {
            o.var_name = Some(v);
        }
    }
    if let Some(d) = o.impl_popt_val.take() {
        if d.value != Literal::Str(name.value.clone()) {
            o.default = Some(d);
        }
    }
    let mut new = format!(
        "app.defProperty('{}', '{}', '{parameter}'",
        name.value, description
    );
    if let Some(Node {
        expr: Expr::Sym(t) | Expr::Str(t),
        ..
    }) = &o.ty
    {
        new.push_str(&format!(", :type => :{t}"));
    }
    if let Some(m) = &o.mnemonic {
        new.push_str(&format!(", :mnemonic => '{}'", m.value));
    }
    if let Some(v) = &o.var_name {
        new.push_str(&format!(", :var_name => '{}'", v.value));
    }
    new.push(')');
    notes.warnings.push(Warning {
        loc: name.loc.clone(),
        message: format!(
            "obsolescent (OMF 5.3) declaration of property `{}`; write it as {new}",
            name.value
        ),
    });
    Some(parameter)
}
