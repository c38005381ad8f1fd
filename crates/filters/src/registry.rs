//! The filter names: creating filters, the catalogue, the default choice.

use omsp::names::is_valid_name;
use omsp::OmlType;

use crate::{avg, count, delta, first, histogram, jitter, last, loss, max, min, quantile, rate};
use crate::{column_name, stddev, sum, Filter, FilterError, Property};

/// One entry of the filter catalogue, as `--oml-list-filters` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterInfo {
    /// The `operation` name.
    pub name: &'static str,
    /// The input types it takes.
    pub inputs: &'static str,
    /// Its output columns (`<f>` stands for the prefix) and their types.
    pub outputs: &'static str,
    /// What it computes per window, in one line.
    pub summary: &'static str,
    /// Its properties (`none` when it takes none).
    pub properties: &'static str,
}

/// The catalogue: the reference's six in its listing order, then ours.
static CATALOGUE: [FilterInfo; 14] = [
    FilterInfo {
        name: "delta",
        inputs: "numeric",
        outputs: "<f>_delta:double <f>_last:double",
        summary: "last value minus the previous window's last value",
        properties: "none",
    },
    FilterInfo {
        name: "sum",
        inputs: "numeric",
        outputs: "<f>_sum:double",
        summary: "sum of the window (0 when empty)",
        properties: "none",
    },
    FilterInfo {
        name: "stddev",
        inputs: "numeric",
        outputs: "<f>_stddev:double <f>_variance:double",
        summary: "sample standard deviation and variance (NaN for n <= 1)",
        properties: "none",
    },
    FilterInfo {
        name: "last",
        inputs: "any",
        outputs: "<f>_last:<input>",
        summary: "last value of the window (repeated when empty)",
        properties: "none",
    },
    FilterInfo {
        name: "first",
        inputs: "any",
        outputs: "<f>:<input>",
        summary: "first value of the window (repeated when empty)",
        properties: "none",
    },
    FilterInfo {
        name: "avg",
        inputs: "numeric",
        outputs: "<f>_avg:double <f>_min:double <f>_max:double",
        summary: "mean, minimum and maximum (NaN when empty)",
        properties: "none",
    },
    FilterInfo {
        name: "histogram",
        inputs: "numeric",
        outputs: "<f>_avg:double <f>_min:double <f>_max:double [<f>_hist:[uint64]]",
        summary: "as avg, plus bin counts over [min,max) when bins is set",
        properties: "bins (1-65535), min (default 0), max (default min+bins)",
    },
    FilterInfo {
        name: "min",
        inputs: "numeric",
        outputs: "<f>_min:double",
        summary: "smallest value (NaN when empty)",
        properties: "none",
    },
    FilterInfo {
        name: "max",
        inputs: "numeric",
        outputs: "<f>_max:double",
        summary: "largest value (NaN when empty)",
        properties: "none",
    },
    FilterInfo {
        name: "count",
        inputs: "any",
        outputs: "<f>_count:uint64",
        summary: "number of samples in the window",
        properties: "none",
    },
    FilterInfo {
        name: "rate",
        inputs: "numeric",
        outputs: "<f>_rate:double",
        summary: "sum of the window per second since the previous row",
        properties: "none",
    },
    FilterInfo {
        name: "jitter",
        inputs: "numeric (sender timestamp, s)",
        outputs: "<f>_jitter:double",
        summary: "RFC 3550 interarrival jitter in seconds (kept across windows)",
        properties: "none",
    },
    FilterInfo {
        name: "loss",
        inputs: "integer (sequence number)",
        outputs: "<f>_received:uint64 <f>_lost:uint64 <f>_loss_ratio:double",
        summary: "samples received and sequence numbers skipped",
        properties: "none",
    },
    FilterInfo {
        name: "quantile",
        inputs: "numeric",
        outputs: "<f>_p50:double <f>_p90:double <f>_p99:double (one per q)",
        summary: "quantiles from a sketch within relative error `accuracy`",
        properties: "q (default 0.5,0.9,0.99), accuracy (default 0.01)",
    },
];

/// Every filter [`create`] knows: the reference's six first, in the order
/// liboml2 lists them (`delta sum stddev last first avg`), then streamgauge's.
pub fn catalogue() -> &'static [FilterInfo] {
    &CATALOGUE
}

/// The filter a field gets when the configuration names none (spec §8.6):
/// `avg` when the stream aggregates (more than one sample per row, or an
/// interval) and the field is numeric (int32, uint32, int64, uint64, double),
/// else `first`.
pub fn default_operation(input: OmlType, aggregating: bool) -> &'static str {
    if aggregating && input.is_numeric() {
        "avg"
    } else {
        "first"
    }
}

/// Creates filter `operation` over a field of type `input`, whose columns are prefixed by `prefix`.
///
/// Fails if the name is unknown, the filter cannot take `input`, a property
/// is unknown or bad, or a resulting column name is not a valid OML name.
pub fn create(
    operation: &str,
    prefix: &str,
    input: OmlType,
    properties: &[Property],
) -> Result<Box<dyn Filter>, FilterError> {
    let p = properties;
    let filter: Box<dyn Filter> = match operation {
        "delta" => Box::new(delta::Delta::new(input, p)?),
        "sum" => Box::new(sum::Sum::new(input, p)?),
        "stddev" => Box::new(stddev::StdDev::new(input, p)?),
        "last" => Box::new(last::Last::new(input, p)?),
        "first" => Box::new(first::First::new(input, p)?),
        "avg" => Box::new(avg::Avg::new(input, p)?),
        "histogram" => Box::new(histogram::Histogram::new(input, p)?),
        "min" => Box::new(min::Min::new(input, p)?),
        "max" => Box::new(max::Max::new(input, p)?),
        "count" => Box::new(count::Count::new(input, p)?),
        "rate" => Box::new(rate::Rate::new(input, p)?),
        "jitter" => Box::new(jitter::Jitter::new(input, p)?),
        "loss" => Box::new(loss::Loss::new(input, p)?),
        "quantile" => Box::new(quantile::Quantile::new(input, p)?),
        _ => {
            return Err(FilterError::Unknown {
                name: operation.to_owned(),
                known: CATALOGUE
                    .iter()
                    .map(|f| f.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    };
    if let Some(bad) = filter
        .outputs()
        .iter()
        .map(|o| column_name(prefix, o))
        .find(|name| !is_valid_name(name))
    {
        return Err(FilterError::ColumnName { name: bad });
    }
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_filters_come_first_in_reference_order() {
        let names: Vec<_> = catalogue().iter().map(|f| f.name).collect();
        assert_eq!(
            names[..6],
            ["delta", "sum", "stddev", "last", "first", "avg"]
        );
    }

    #[test]
    fn every_catalogued_filter_can_be_created_and_nothing_else() {
        for info in catalogue() {
            let ty = if info.name == "loss" {
                OmlType::Int32
            } else {
                OmlType::Double
            };
            assert!(create(info.name, "x", ty, &[]).is_ok(), "{}", info.name);
        }
        let err = create("histo", "x", OmlType::Double, &[]).err().unwrap();
        let FilterError::Unknown { name, known } = err else {
            panic!("{err:?}");
        };
        assert_eq!(name, "histo");
        assert!(
            known.starts_with("delta, sum, stddev, last, first, avg, "),
            "{known}"
        );
    }

    #[test]
    fn default_choice_follows_the_reference() {
        for ty in OmlType::ALL {
            let want = if ty.is_numeric() { "avg" } else { "first" };
            assert_eq!(default_operation(ty, true), want, "{ty}");
            assert_eq!(default_operation(ty, false), "first", "{ty}");
        }
    }

    #[test]
    fn wrong_input_types_are_refused() {
        for (op, ty) in [
            ("avg", OmlType::String),
            ("sum", OmlType::Bool),
            ("stddev", OmlType::VecDouble),
            ("delta", OmlType::Guid),
            ("histogram", OmlType::Blob),
            ("quantile", OmlType::String),
            ("jitter", OmlType::Bool),
            ("rate", OmlType::VecInt32),
            ("min", OmlType::String),
            ("max", OmlType::Bool),
            ("loss", OmlType::Double),
            ("loss", OmlType::String),
        ] {
            let err = create(op, "x", ty, &[]).err();
            assert_eq!(
                err.as_ref().map(|e| matches!(e, FilterError::Input { filter, ty: t, .. } if filter == op && *t == ty)),
                Some(true),
                "{op} {ty}: {err:?}"
            );
        }
    }

    #[test]
    fn unknown_properties_name_the_filter_and_valid_ones() {
        let props = [Property {
            name: "window".into(),
            ty: "int32".into(),
            value: "3".into(),
        }];
        let err = create("avg", "x", OmlType::Double, &props).err().unwrap();
        assert_eq!(
            err.to_string(),
            "filter `avg` has no property `window`; valid properties: none"
        );
        let err = create("quantile", "x", OmlType::Double, &props)
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("valid properties: q, accuracy"),
            "{err}"
        );
    }

    #[test]
    fn column_names_must_be_valid() {
        let err = create("avg", "bad-name", OmlType::Double, &[]).err();
        assert_eq!(
            err,
            Some(FilterError::ColumnName {
                name: "bad-name_avg".into()
            })
        );
        assert!(create("first", "", OmlType::Double, &[]).is_err());
        assert!(create("first", "_ok9", OmlType::Double, &[]).is_ok());
    }
}
