//! Axis labels with units and SI prefixes: values are scaled by a power
//! of 1000 so that tick labels stay short (`0.00042 s` is drawn as
//! `420` on an axis labelled `µs`).

/// SI prefixes by power of 1000, from 10⁻¹⁵ to 10¹⁸.
const PREFIXES: &[(i32, &str)] = &[
    (-15, "f"),
    (-12, "p"),
    (-9, "n"),
    (-6, "µ"),
    (-3, "m"),
    (0, ""),
    (3, "k"),
    (6, "M"),
    (9, "G"),
    (12, "T"),
    (15, "P"),
    (18, "E"),
];

/// Units that take SI prefixes (`ms`, `kB/s`, `Mbit/s`, `GHz`, …). Others
/// (`%`, `dBm`, `packets`, `KiB`) are kept as they are.
const PREFIXABLE: &[&str] = &[
    "s",
    "B",
    "b",
    "bit",
    "bps",
    "Bps",
    "B/s",
    "b/s",
    "bit/s",
    "Hz",
    "W",
    "V",
    "A",
    "m",
    "g",
    "J",
    "Pa",
    "pkt/s",
    "packets/s",
];

/// A unit split into its SI prefix (power of ten) and base.
fn split(unit: &str) -> Option<(i32, &str)> {
    if PREFIXABLE.contains(&unit) {
        return Some((0, unit));
    }
    let mut chars = unit.chars();
    let first = chars.next()?;
    let rest = chars.as_str();
    let exp = match first {
        'u' | 'µ' | 'μ' => -6,
        c => PREFIXES
            .iter()
            .find(|(_, p)| p.starts_with(c) && !p.is_empty())
            .map(|(e, _)| *e)?,
    };
    PREFIXABLE.contains(&rest).then_some((exp, rest))
}

/// 10^n, correctly rounded (`powi` may be off in the last bit).
fn pow10(n: i32) -> f64 {
    format!("1e{n}").parse().unwrap_or(1.0)
}

/// The unit of a plotted field: the stored unit, per second for rates.
pub fn plotted_unit(stored: Option<&str>, rate: bool) -> String {
    match (stored.unwrap_or(""), rate) {
        ("", true) => "1/s".to_owned(),
        (u, true) => format!("{u}/s"),
        (u, false) => u.to_owned(),
    }
}

/// How one axis shows its values.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisScale {
    /// Values are divided by this before drawing.
    pub divisor: f64,
    /// The axis label (`rtt (ms)`, `rx, tx (Mbit/s)`).
    pub label: String,
}

/// The scale and label of an axis showing `fields` (name, plotted unit)
/// whose values reach `max_abs` in magnitude.
pub fn axis_scale(fields: &[(String, String)], max_abs: f64) -> AxisScale {
    let names: Vec<&str> = fields.iter().map(|(f, _)| f.as_str()).collect();
    let same_unit = fields.windows(2).all(|w| w[0].1 == w[1].1);
    let unit = fields.first().map(|(_, u)| u.as_str()).unwrap_or("");
    if !same_unit {
        let parts: Vec<String> = fields
            .iter()
            .map(|(f, u)| {
                if u.is_empty() {
                    f.clone()
                } else {
                    format!("{f} ({u})")
                }
            })
            .collect();
        return AxisScale {
            divisor: 1.0,
            label: parts.join(", "),
        };
    }
    let names = names.join(", ");
    // The power of 1000 that puts the largest value in 1..1000.
    let exp3 = if max_abs.is_finite() && max_abs > 0.0 {
        (max_abs.log10() / 3.0).floor() as i32 * 3
    } else {
        0
    };
    let label = |u: &str| {
        if u.is_empty() {
            names.clone()
        } else {
            format!("{names} ({u})")
        }
    };
    match split(unit) {
        Some((base_exp, base)) => {
            let total = (base_exp + exp3).clamp(-15, 18);
            let prefix = PREFIXES
                .iter()
                .find(|(e, _)| *e == total)
                .map(|(_, p)| *p)
                .unwrap_or("");
            AxisScale {
                divisor: pow10(total - base_exp),
                label: label(&format!("{prefix}{base}")),
            }
        }
        // Unknown units keep their values unless they are far from 1.
        None if exp3.abs() >= 6 => AxisScale {
            divisor: pow10(exp3),
            label: if unit.is_empty() {
                format!("{names} (×1e{exp3})")
            } else {
                format!("{names} (×1e{exp3} {unit})")
            },
        },
        None => AxisScale {
            divisor: 1.0,
            label: label(unit),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(unit: &str, max: f64) -> AxisScale {
        axis_scale(&[("v".to_owned(), unit.to_owned())], max)
    }

    #[test]
    fn prefixes_follow_the_values() {
        assert_eq!(
            one("s", 0.00042),
            AxisScale {
                divisor: 1e-6,
                label: "v (µs)".into()
            }
        );
        assert_eq!(one("ms", 0.002).label, "v (µs)");
        assert_eq!(one("ms", 0.002).divisor, 1e-3);
        assert_eq!(
            one("ms", 250.0),
            AxisScale {
                divisor: 1.0,
                label: "v (ms)".into()
            }
        );
        assert_eq!(one("B/s", 1.25e9).label, "v (GB/s)");
        assert_eq!(one("kbit/s", 3.0e4).label, "v (Mbit/s)");
        assert_eq!(one("us", 5e3).label, "v (ms)");
        assert_eq!(
            one("%", 50.0),
            AxisScale {
                divisor: 1.0,
                label: "v (%)".into()
            }
        );
        assert_eq!(one("min", 5e3).label, "v (min)");
        assert_eq!(one("packets", 3e7).label, "v (×1e6 packets)");
        assert_eq!(one("", 0.0).label, "v");
        assert_eq!(one("", 2e9).label, "v (×1e9)");
    }

    #[test]
    fn fields_share_or_list_units() {
        let f = |n: &str, u: &str| (n.to_owned(), u.to_owned());
        assert_eq!(
            axis_scale(&[f("rx", "B/s"), f("tx", "B/s")], 2e6).label,
            "rx, tx (MB/s)"
        );
        let mixed = axis_scale(&[f("rtt", "ms"), f("ttl", "")], 64.0);
        assert_eq!(
            mixed,
            AxisScale {
                divisor: 1.0,
                label: "rtt (ms), ttl".into()
            }
        );
        assert_eq!(plotted_unit(Some("B"), true), "B/s");
        assert_eq!(plotted_unit(None, true), "1/s");
        assert_eq!(plotted_unit(Some("ms"), false), "ms");
    }
}
