//! clap value parsers for the numbers on the command line. Negative numbers are read as values
//! (`allow_negative_numbers`), so `--n -5` and `--n=-5` get the same refusal, in these words.

use cudamin::XScale;

/// The most timed repetitions `eval --repeat` takes: each stores one time.
pub const REPEAT_MAX: u64 = 1_000_000;

/// A whole number of at least `min`.
fn whole(text: &str, min: u64) -> Result<u64, String> {
    let number: i128 = text
        .trim()
        .parse()
        .map_err(|_| format!("expected a whole number, got `{text}`"))?;
    if number < i128::from(min) {
        return Err(format!("must be at least {min}, got {number}"));
    }
    u64::try_from(number).map_err(|_| format!("must be at most {}, got {number}", u64::MAX))
}

/// A whole number of at least `min` that fits a `usize`.
fn size(text: &str, min: u64) -> Result<usize, String> {
    let n = whole(text, min)?;
    usize::try_from(n).map_err(|_| format!("must be at most {}, got {n}", usize::MAX))
}

/// A count that may be 0 here (the problem or the backend decides what it allows, and says so).
pub fn count(text: &str) -> Result<usize, String> {
    size(text, 0)
}

/// A count of at least one: `--maxcor` (pairs), `--maxls` (evaluations).
pub fn at_least_one(text: &str) -> Result<usize, String> {
    size(text, 1)
}

/// A launch size: a whole number that fits CUDA's 32-bit dimensions.
pub fn launch_size(text: &str) -> Result<u32, String> {
    let n = whole(text, 0)?;
    u32::try_from(n).map_err(|_| format!("must be at most {}, got {n}", u32::MAX))
}

/// `eval --repeat`: 1 to [`REPEAT_MAX`].
pub fn repeat(text: &str) -> Result<usize, String> {
    let n = whole(text, 1)?;
    if n > REPEAT_MAX {
        return Err(format!("must be at most {REPEAT_MAX}, got {n}"));
    }
    Ok(n as usize)
}

/// A tolerance: finite, positive, and a normal double, so that it means what it says (a value
/// below about 2.2e-308 would silently round to a subnormal or to 0).
pub fn tolerance(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("expected a number, got `{text}`"))?;
    if value.is_nan() || value.is_infinite() {
        return Err(format!("must be finite, got {value}"));
    }
    // A zero that was written with nonzero digits is an underflow, told apart below.
    let mantissa = text.trim().split(['e', 'E']).next().unwrap_or("");
    let written_as_zero = !mantissa.chars().any(|c| ('1'..='9').contains(&c));
    if value < 0.0 || text.trim().starts_with('-') || written_as_zero {
        // The text as written: `{value}` would spell -1e-300 out in 300 digits.
        return Err(format!("must be positive, got {}", text.trim()));
    }
    if !value.is_normal() {
        return Err(format!(
            "`{text}` is below the smallest normal double, {:e}",
            f64::MIN_POSITIVE
        ));
    }
    Ok(value)
}

/// Finite numbers separated by commas, as `--p0 1,0.5,-2`.
#[derive(Clone, Debug, PartialEq)]
pub struct Numbers(pub Vec<f64>);

pub fn numbers(text: &str) -> Result<Numbers, String> {
    text.split(',')
        .map(|field| {
            let value: f64 = field
                .trim()
                .parse()
                .map_err(|_| format!("expected numbers separated by commas, got `{field}`"))?;
            if value.is_finite() {
                Ok(value)
            } else {
                Err(format!("must be finite, got {value}"))
            }
        })
        .collect::<Result<_, _>>()
        .map(Numbers)
}

/// `--x-scale`: `jac`, or positive finite numbers separated by commas.
pub fn x_scale(text: &str) -> Result<XScale, String> {
    if text.trim() == "jac" {
        return Ok(XScale::Jac);
    }
    let Numbers(scale) = numbers(text).map_err(|e| format!("`jac` or {e}"))?;
    match scale.iter().find(|s| **s <= 0.0) {
        Some(bad) => Err(format!("each scale must be positive, got {bad}")),
        None => Ok(XScale::Fixed(scale)),
    }
}

/// A held variable, as `--fix 2=0.5` or `--fix b0=0.5`: which one, and the finite value it is
/// held at.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    pub variable: Variable,
    pub value: f64,
}

/// A variable as `--fix` names it: by its 0-based index, or by a fit model's name for it.
#[derive(Clone, Debug, PartialEq)]
pub enum Variable {
    Index(usize),
    Name(String),
}

impl std::fmt::Display for Variable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Variable::Index(index) => write!(f, "{index}"),
            Variable::Name(name) => f.write_str(name),
        }
    }
}

/// A 0-based index written as reports write one: decimal digits, no sign, no leading zero
/// (`usize::from_str` would take `+3` and `03` too, which no report prints).
pub fn index(text: &str) -> Option<usize> {
    let canonical =
        text.bytes().all(|b| b.is_ascii_digit()) && !(text.len() > 1 && text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

pub fn fix(text: &str) -> Result<Fix, String> {
    let (variable, value) =
        (text.split_once('=')).ok_or_else(|| format!("expected VAR=VALUE, got `{text}`"))?;
    let variable = variable.trim();
    let variable = match index(variable) {
        Some(index) => Variable::Index(index),
        // A name starts with a letter (a negative or fractional index is not one).
        None if variable.starts_with(char::is_alphabetic) => Variable::Name(variable.to_owned()),
        None => {
            return Err(format!(
                "expected a 0-based index (no sign, no leading zero) or a parameter's name before `=`, got `{variable}`"
            ));
        }
    };
    let value: f64 = (value.trim().parse())
        .map_err(|_| format!("expected a number after `=`, got `{value}`"))?;
    if !value.is_finite() {
        return Err(format!("the value must be finite, got {value}"));
    }
    Ok(Fix { variable, value })
}

/// Bounds, as `--lower 0,-inf,1`: numbers separated by commas, `inf` and `-inf` allowed (no
/// bound on that side), NaN refused.
pub fn bounds(text: &str) -> Result<Numbers, String> {
    text.split(',')
        .map(|field| {
            let value: f64 = field.trim().parse().map_err(|_| {
                format!("expected numbers (or inf, -inf) separated by commas, got `{field}`")
            })?;
            if value.is_nan() {
                Err("a bound must be a number or ±inf, got NaN".to_owned())
            } else {
                Ok(value)
            }
        })
        .collect::<Result<_, _>>()
        .map(Numbers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_refuse_what_they_cannot_hold_in_words() {
        assert_eq!(count("12"), Ok(12));
        assert_eq!(count("0"), Ok(0));
        assert_eq!(count("-5").unwrap_err(), "must be at least 0, got -5");
        assert_eq!(
            count("ten").unwrap_err(),
            "expected a whole number, got `ten`"
        );
        assert!(count("1e3").is_err());
        assert!(
            count("18446744073709551616")
                .unwrap_err()
                .contains("at most")
        );
        assert_eq!(launch_size("1024"), Ok(1024));
        assert!(
            launch_size("4294967296")
                .unwrap_err()
                .contains("at most 4294967295")
        );
        assert_eq!(repeat("3"), Ok(3));
        assert_eq!(repeat("0").unwrap_err(), "must be at least 1, got 0");
        assert!(
            repeat("18446744073709551615")
                .unwrap_err()
                .contains("at most 1000000")
        );
    }

    #[test]
    fn tolerances_are_finite_positive_normal_numbers() {
        assert_eq!(tolerance("1e-5"), Ok(1e-5));
        assert_eq!(tolerance("-1").unwrap_err(), "must be positive, got -1");
        assert_eq!(tolerance("0").unwrap_err(), "must be positive, got 0");
        assert_eq!(tolerance("inf").unwrap_err(), "must be finite, got inf");
        assert_eq!(tolerance("nan").unwrap_err(), "must be finite, got NaN");
        assert!(
            tolerance("1e-400")
                .unwrap_err()
                .contains("smallest normal double")
        );
        assert!(
            tolerance("1e-310")
                .unwrap_err()
                .contains("smallest normal double")
        );
        assert!(tolerance("tiny").unwrap_err().contains("expected a number"));
        assert_eq!(tolerance("0e5").unwrap_err(), "must be positive, got 0e5");
        assert_eq!(
            tolerance("-1e-400").unwrap_err(),
            "must be positive, got -1e-400"
        );
        assert_eq!(
            tolerance(" -1e-300").unwrap_err(),
            "must be positive, got -1e-300"
        );
    }

    #[test]
    fn number_lists_are_finite_and_comma_separated() {
        assert_eq!(numbers("1, -0.5,2e3"), Ok(Numbers(vec![1.0, -0.5, 2e3])));
        assert_eq!(
            numbers("1,,2").unwrap_err(),
            "expected numbers separated by commas, got ``"
        );
        assert_eq!(numbers("1,nan").unwrap_err(), "must be finite, got NaN");
    }

    #[test]
    fn a_fix_names_its_variable_by_index_or_by_name() {
        let held = |variable, value| Ok(Fix { variable, value });
        assert_eq!(fix("3=0.5"), held(Variable::Index(3), 0.5));
        assert_eq!(fix(" b1 = -2"), held(Variable::Name("b1".into()), -2.0));
        assert!(fix("-1=3").unwrap_err().contains("got `-1`"));
        assert!(fix("1.5=3").unwrap_err().contains("got `1.5`"));
        for odd in ["+3=1", "03=1", "=1"] {
            assert!(
                fix(odd).unwrap_err().contains("expected a 0-based index"),
                "{odd}"
            );
        }
        assert_eq!(fix("0=1"), held(Variable::Index(0), 1.0));
        assert_eq!(index("10"), Some(10));
        assert_eq!(index("x3"), None);
        assert_eq!(fix("b1").unwrap_err(), "expected VAR=VALUE, got `b1`");
        assert_eq!(
            fix("b1=inf").unwrap_err(),
            "the value must be finite, got inf"
        );
    }
}
