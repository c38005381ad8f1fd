//! Checking and parsing filter properties.
//!
//! Property values are parsed from their text; the declared `type` attribute
//! is not checked (the reference passes it to the filter, and a config that
//! says `type="string"` — the default — for a number is common). Values are
//! trimmed first, since XML text often carries surrounding whitespace. When a
//! property is given twice, the last one wins, as with the reference's
//! successive `set` calls.

use crate::{FilterError, Property};

/// The properties given to one filter, checked against the names it knows.
pub(crate) struct Props<'a> {
    /// The filter's name, for error messages.
    filter: &'static str,
    /// The properties as configured.
    list: &'a [Property],
}

impl<'a> Props<'a> {
    /// Checks that every property in `list` is one of `valid`.
    pub(crate) fn new(
        filter: &'static str,
        list: &'a [Property],
        valid: &[&str],
    ) -> Result<Self, FilterError> {
        if let Some(p) = list.iter().find(|p| !valid.contains(&p.name.as_str())) {
            return Err(FilterError::UnknownProperty {
                filter: filter.to_owned(),
                name: p.name.clone(),
                valid: if valid.is_empty() {
                    "none".to_owned()
                } else {
                    valid.join(", ")
                },
            });
        }
        Ok(Props { filter, list })
    }

    /// The property called `name`, if given (the last one when repeated).
    pub(crate) fn get(&self, name: &str) -> Option<&'a Property> {
        self.list.iter().rev().find(|p| p.name == name)
    }

    /// The error for a bad value of `p`.
    pub(crate) fn bad(&self, p: &Property, reason: impl Into<String>) -> FilterError {
        FilterError::BadProperty {
            filter: self.filter.to_owned(),
            name: p.name.clone(),
            value: p.value.clone(),
            reason: reason.into(),
        }
    }

    /// Property `name` as a finite double, if given.
    pub(crate) fn f64(&self, name: &str) -> Result<Option<f64>, FilterError> {
        self.get(name).map(|p| self.parse_f64(p)).transpose()
    }

    /// The value of `p` as a finite double.
    pub(crate) fn parse_f64(&self, p: &Property) -> Result<f64, FilterError> {
        match p.value.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.bad(p, "expected a finite number")),
        }
    }

    /// The value of `p` as an unsigned integer.
    pub(crate) fn parse_u64(&self, p: &Property) -> Result<u64, FilterError> {
        p.value
            .trim()
            .parse::<u64>()
            .map_err(|_| self.bad(p, "expected a non-negative integer"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prop(name: &str, value: &str) -> Property {
        Property {
            name: name.into(),
            ty: "string".into(),
            value: value.into(),
        }
    }

    #[test]
    fn unknown_names_are_errors_that_list_the_valid_ones() {
        let list = [prop("bins", "3"), prop("colour", "red")];
        let err = Props::new("histogram", &list, &["bins", "min", "max"])
            .err()
            .unwrap();
        assert_eq!(
            err,
            FilterError::UnknownProperty {
                filter: "histogram".into(),
                name: "colour".into(),
                valid: "bins, min, max".into(),
            }
        );
        let err = Props::new("avg", &list[..1], &[]).err().unwrap();
        assert!(err.to_string().contains("valid properties: none"), "{err}");
    }

    #[test]
    fn values_are_trimmed_and_the_last_one_wins() {
        let list = [prop("min", "1"), prop("min", " 2.5\n")];
        let props = Props::new("histogram", &list, &["min"]).unwrap();
        assert_eq!(props.f64("min"), Ok(Some(2.5)));
        assert_eq!(props.f64("max"), Ok(None));
    }

    #[test]
    fn bad_numbers_are_errors() {
        for (name, value) in [
            ("x", "nan"),
            ("x", "inf"),
            ("x", ""),
            ("n", "-1"),
            ("n", "1.5"),
        ] {
            let list = [prop(name, value)];
            let props = Props::new("f", &list, &["x", "n"]).unwrap();
            let r = if name == "x" {
                props.f64(name).map(|_| ())
            } else {
                props.parse_u64(&list[0]).map(|_| ())
            };
            assert!(matches!(r, Err(FilterError::BadProperty { .. })), "{value}");
        }
    }
}
