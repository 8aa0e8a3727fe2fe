//! Kubernetes' CEL quantity library: `quantity(s)`, `isQuantity(s)`, `sign(q)`, and on a quantity
//! `isInteger()`, `asInteger()`, `asApproximateFloat()`, `add(x)` and `sub(x)` (a quantity or an
//! int), `isLessThan(q)`, `isGreaterThan(q)` and `compareTo(q)`; parsed and computed as
//! resource.Quantity does (suffixes Ki Mi Gi Ti Pi Ei, n u m k M G T P E, exponents e/E).

use std::cmp::Ordering;

use cel::common::types::{Kind, Type, INT_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError};
use num_bigint::{BigInt, BigUint, Sign};

use super::support::{error, int, opaque, string, value, wrap, Ret};

const QUANTITY_NAME: &str = "kubernetes.Quantity";
const QUANTITY: Type = Type::simple_type(Kind::Opaque, QUANTITY_NAME);

const FORMAT: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const NUMERIC: &str = "unable to parse numeric part of quantity";
const SUFFIX: &str = "unable to parse quantity's suffix";
/// Beyond this many decimal digits of rescaling (absurd exponents), refuse rather than compute.
const MAX_SHIFT: i64 = 10_000;
const TOO_BIG: &str = "quantity too large to compute exactly";

/// Declares the library's functions.
pub fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(QUANTITY)?;
    env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], |a| wrap(parse(string(&a, 0)?).map_err(|e| error("quantity", e))?))?;
    env.add_overload("isQuantity", "is_quantity_string", vec![STRING_TYPE], |a| value(parse(string(&a, 0)?).is_ok()))?;
    env.add_overload("sign", "quantity_sign", vec![QUANTITY], |a| value(this(&a)?.sign()))?;
    env.add_member_overload("isGreaterThan", "quantity_is_greater_than", QUANTITY, vec![QUANTITY], |a| value(compare(&a)? == Ordering::Greater))?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", QUANTITY, vec![QUANTITY], |a| value(compare(&a)? == Ordering::Less))?;
    env.add_member_overload("compareTo", "quantity_compare_to", QUANTITY, vec![QUANTITY], |a| value(compare(&a)? as i64))?;
    env.add_member_overload("asApproximateFloat", "quantity_get_float", QUANTITY, vec![], |a| value(this(&a)?.as_f64()))?;
    env.add_member_overload("asInteger", "quantity_get_int", QUANTITY, vec![], |a| {
        value(this(&a)?.as_int64().ok_or_else(|| error("asInteger", "cannot convert value to integer"))?)
    })?;
    env.add_member_overload("isInteger", "quantity_is_integer", QUANTITY, vec![], |a| value(this(&a)?.as_int64().is_some()))?;
    env.add_member_overload("add", "quantity_add", QUANTITY, vec![QUANTITY], |a| sum(&a, opaque(&a, 1)?, false))?;
    env.add_member_overload("add", "quantity_add_int", QUANTITY, vec![INT_TYPE], |a| sum(&a, Quantity::Small { value: int(&a, 1)?, scale: 0 }, false))?;
    env.add_member_overload("sub", "quantity_sub", QUANTITY, vec![QUANTITY], |a| sum(&a, opaque(&a, 1)?, true))?;
    env.add_member_overload("sub", "quantity_sub_int", QUANTITY, vec![INT_TYPE], |a| sum(&a, Quantity::Small { value: int(&a, 1)?, scale: 0 }, true))?;
    Ok(())
}

fn this(args: &[CowVal<'_, '_>]) -> Result<Quantity, ExecutionError> {
    opaque(args, 0)
}

fn compare(args: &[CowVal<'_, '_>]) -> Result<Ordering, ExecutionError> {
    Ok(this(args)?.compare(&opaque(args, 1)?))
}

fn sum<'b, 'v>(args: &[CowVal<'_, '_>], y: Quantity, subtract: bool) -> Ret<'b, 'v> {
    wrap(this(args)?.add(&y, subtract).map_err(|e| error(if subtract { "sub" } else { "add" }, e))?)
}

/// A quantity as resource.Quantity holds it: `value × 10^scale` while that fits an int64, else
/// the exact decimal `unscaled × 10^exp` (which stays one).
#[derive(Clone, Debug)]
pub enum Quantity {
    Small { value: i64, scale: i64 },
    Big { unscaled: BigInt, exp: i64 },
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl cel::objects::Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        QUANTITY_NAME
    }
}

/// A quantity's string cut where resource.Quantity cuts it.
struct Parts<'a> {
    negative: bool,
    /// The integer digits without their leading zeros ("0" if none).
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
    /// Whether a digit comes before the suffix.
    digits: bool,
}

fn split(s: &str) -> Result<Parts<'_>, &'static str> {
    let b = s.as_bytes();
    let digits_in = |end: usize| s.as_bytes()[..end].iter().any(u8::is_ascii_digit);
    let negative = b.first() == Some(&b'-');
    let mut pos = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    if pos == b.len() {
        return Ok(Parts { negative, num: "0", denom: "", suffix: "", digits: true });
    }
    let start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    let mut denom = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
    }
    let (value_end, suffix_start) = (pos, pos);
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && matches!(b[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < b.len() {
        return Err(FORMAT);
    }
    Ok(Parts { negative, num, denom, suffix: &s[suffix_start..], digits: digits_in(value_end) })
}

/// What a suffix multiplies by: `(binary, exponent)`, `10^exponent` or `2^exponent`.
fn interpret(suffix: &str) -> Option<(bool, i64)> {
    let decimal = [("n", -9), ("u", -6), ("m", -3), ("", 0), ("k", 3), ("M", 6), ("G", 9), ("T", 12), ("P", 15), ("E", 18)];
    let binary = [("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40), ("Pi", 50), ("Ei", 60)];
    if let Some((_, e)) = decimal.iter().find(|(s, _)| *s == suffix) {
        return Some((false, *e));
    }
    if let Some((_, e)) = binary.iter().find(|(s, _)| *s == suffix) {
        return Some((true, *e));
    }
    let exponent = suffix.strip_prefix(['e', 'E']).filter(|e| !e.is_empty())?;
    // Go keeps the low 32 bits of the exponent.
    exponent.parse::<i64>().ok().map(|e| (false, i64::from(e as i32)))
}

fn pow10(n: i64) -> Result<BigInt, &'static str> {
    match u32::try_from(n) {
        Ok(n) if i64::from(n) <= MAX_SHIFT => Ok(BigInt::from(10u8).pow(n)),
        _ => Err(TOO_BIG),
    }
}

fn digit_count(n: &BigInt) -> i64 {
    n.magnitude().to_string().len() as i64
}

/// resource.ParseQuantity.
pub fn parse(s: &str) -> Result<Quantity, &'static str> {
    if s.is_empty() {
        return Err(FORMAT);
    }
    if s == "0" {
        return Ok(Quantity::Small { value: 0, scale: 0 });
    }
    let p = split(s)?;
    let (binary, exponent) = interpret(p.suffix).ok_or(SUFFIX)?;
    let (num, denom) = (p.num.len() as i64, p.denom.len() as i64);
    let (precision, scale, mantissa) = match binary {
        false => (18 - num - denom, exponent, 1i64),
        true if denom == 0 => (15 - num - exponent * 3 / 10 - 1, 0, 1i64 << exponent),
        true => (-1, 0, 1),
    };
    if precision >= 0 && scale - denom >= -9 {
        let shifted: i64 = format!("{}{}", p.num, p.denom).parse().map_err(|_| NUMERIC)?;
        if let Some(v) = shifted.checked_mul(mantissa) {
            return Ok(Quantity::Small { value: if p.negative { -v } else { v }, scale: scale - denom });
        }
    }
    if !p.digits {
        return Err(NUMERIC);
    }
    let mut magnitude = BigInt::parse_bytes(format!("{}{}", p.num, p.denom).as_bytes(), 10).ok_or(NUMERIC)?;
    let mut exp = -denom;
    if binary {
        magnitude <<= exponent;
    } else {
        exp += exponent;
    }
    if magnitude.sign() != Sign::NoSign {
        // Rounded up to whole nanos, the smallest amount a quantity holds.
        magnitude = if exp >= -9 {
            magnitude * pow10(exp + 9)?
        } else if -9 - exp >= digit_count(&magnitude) {
            BigInt::from(1)
        } else {
            let unit = pow10(-9 - exp)?;
            let (whole, rest) = (&magnitude / &unit, &magnitude % &unit);
            if rest.sign() == Sign::NoSign { whole } else { whole + 1 }
        };
        exp = -9;
    }
    if binary && magnitude > BigInt::from(i64::MAX) {
        magnitude = BigInt::from(i64::MAX);
        exp = 0;
    }
    let unscaled = if p.negative { -magnitude } else { magnitude };
    Ok(Quantity::Big { unscaled, exp })
}

/// `v × 10^by`, if it fits an int64.
fn scale_up(v: i64, by: i64) -> Option<i64> {
    if v == 0 {
        return Some(0);
    }
    (0..by).try_fold(v, |v, _| v.checked_mul(10))
}

impl Quantity {
    /// -1, 0 or 1 as the quantity is negative, zero or positive.
    pub fn sign(&self) -> i64 {
        match self {
            Quantity::Small { value, .. } => value.signum(),
            Quantity::Big { unscaled, .. } => match unscaled.sign() {
                Sign::Minus => -1,
                Sign::NoSign => 0,
                Sign::Plus => 1,
            },
        }
    }

    /// The exact value as `unscaled × 10^exp`.
    pub(crate) fn decimal(&self) -> (BigInt, i64) {
        match self {
            Quantity::Small { value, scale } => (BigInt::from(*value), *scale),
            Quantity::Big { unscaled, exp } => (unscaled.clone(), *exp),
        }
    }

    /// The exact comparison, deciding by the leading digits' places first so that no absurd
    /// exponent is ever expanded.
    pub fn compare(&self, other: &Quantity) -> Ordering {
        let (sign, other_sign) = (self.sign(), other.sign());
        if sign != other_sign || sign == 0 {
            return sign.cmp(&other_sign);
        }
        let ((a, ea), (b, eb)) = (self.decimal(), other.decimal());
        let lead = (digit_count(&a) + ea).cmp(&(digit_count(&b) + eb));
        let magnitude = if lead != Ordering::Equal {
            lead
        } else {
            // Same leading place: the exponents differ by no more than the digit counts do.
            let e = ea.min(eb);
            let widen = |n: &BigInt, by: i64| n.magnitude() * BigUint::from(10u8).pow(by as u32);
            widen(&a, ea - e).cmp(&widen(&b, eb - e))
        };
        if sign > 0 { magnitude } else { magnitude.reverse() }
    }

    /// Quantity.AsInt64: only a small quantity with no fraction digits, that fits.
    fn as_int64(&self) -> Option<i64> {
        match self {
            Quantity::Small { value, scale } if *scale >= 0 => scale_up(*value, *scale),
            _ => None,
        }
    }

    /// Whether the quantity is a whole number (no fraction, not even of a thousandth).
    pub fn is_integer(&self) -> bool {
        let (n, exp) = self.decimal();
        exp >= 0 || pow10(-exp).is_ok_and(|unit| (n % unit).sign() == Sign::NoSign)
    }

    /// Quantity.AsApproximateFloat64.
    fn as_f64(&self) -> f64 {
        let (base, exp) = match self {
            Quantity::Small { value, scale } => (*value as f64, *scale),
            Quantity::Big { unscaled, exp } => (unscaled.to_string().parse().unwrap_or(f64::NAN), *exp),
        };
        if exp == 0 { base } else { base * pow10_f64(exp) }
    }

    /// Quantity.Add or, `subtract`ing, Quantity.Sub.
    pub(crate) fn add(&self, y: &Quantity, subtract: bool) -> Result<Quantity, &'static str> {
        if let (Quantity::Small { value: a, scale: sa }, Quantity::Small { value: b, scale: sb }) = (self, y) {
            let b = if subtract { b.wrapping_neg() } else { *b };
            let small = match (a, b) {
                (_, 0) => Some((*a, *sa)),
                (0, _) => Some((b, *sb)),
                _ if sa == sb => a.checked_add(b).map(|v| (v, *sa)),
                _ if sa > sb => scale_up(*a, sa - sb).and_then(|a| a.checked_add(b)).map(|v| (v, *sb)),
                _ => scale_up(b, sb - sa).and_then(|b| a.checked_add(b)).map(|v| (v, *sa)),
            };
            if let Some((value, scale)) = small {
                return Ok(Quantity::Small { value, scale });
            }
        }
        let ((a, ea), (b, eb)) = (self.decimal(), y.decimal());
        let b = if subtract { -b } else { b };
        let exp = ea.min(eb);
        let unscaled = a * pow10(ea - exp)? + b * pow10(eb - exp)?;
        Ok(Quantity::Big { unscaled, exp })
    }
}

/// Go's math.Pow10: exact powers of ten up to 1e31, times or divided by one of 1e32k.
fn pow10_f64(n: i64) -> f64 {
    let exact = |k: i64| format!("1e{k}").parse::<f64>().unwrap_or(f64::NAN);
    match n {
        0..=308 => exact(n / 32 * 32) * exact(n % 32),
        -323..=-1 => exact(n / 32 * 32) / exact(-n % 32),
        309.. => f64::INFINITY,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::testing::{eval, t};
    use cel::Value;

    #[test]
    fn parses_as_resource_quantity_does() {
        assert!(matches!(parse("12Mi"), Ok(Quantity::Small { value: 12582912, scale: 0 })));
        assert!(matches!(parse("1.5G"), Ok(Quantity::Small { value: 15, scale: 8 })));
        assert!(matches!(parse("1.5Gi"), Ok(Quantity::Big { .. })));
        assert_eq!(parse("10Mo").unwrap_err(), FORMAT);
        assert_eq!(parse("10Mm").unwrap_err(), SUFFIX);
        assert_eq!(parse("").unwrap_err(), FORMAT);
        assert_eq!(parse(".e-20").unwrap_err(), NUMERIC);
        assert_eq!(parse("1.5n"), parse("2n"), "rounded up to nanos");
        assert_eq!(parse("1e-30"), parse("1n"));
        assert_eq!(parse("12e2"), parse("1.2k"));
        assert_eq!(parse("-1E3"), parse("-1k"));
        assert_eq!(parse("1e-2147483648").map(|q| q.sign()), Ok(1), "no absurd exponent is expanded");
        assert_eq!(parse("99999999999999999999Ei"), parse("9223372036854775807"), "binary quantities are capped");
    }

    #[test]
    fn the_quantity_library_answers_as_kubernetes_does() {
        t("quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')");
        t("quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M')");
        t("quantity('200M') != quantity('0.3G')");
        t("isQuantity('20') && isQuantity('20Mi') && isQuantity('1.3G') && isQuantity('10000k')");
        t("!isQuantity('20Mo') && !isQuantity('10Mm') && !isQuantity('1,3G') && !isQuantity('200K') && !isQuantity('Three')");
        // resource.ParseQuantity takes a missing number for 0 (whatever the library's docs say).
        t("quantity('Mi') == quantity('0') && quantity('-') == quantity('0')");
        t("quantity('50M').isLessThan(quantity('50Mi')) && !quantity('100M').isLessThan(quantity('50M'))");
        t("quantity('50Mi').isGreaterThan(quantity('50M')) && !quantity('50M').isGreaterThan(quantity('100M'))");
        t("quantity('200M').compareTo(quantity('0.2G')) == 0 && quantity('50M').compareTo(quantity('50Mi')) == -1");
        t("quantity('50Mi').compareTo(quantity('50M')) == 1");
        t("quantity('50k').add(quantity('20')) == quantity('50.02k') && quantity('50k').sub(quantity('20')) == quantity('49.98k')");
        t("!quantity('50k').add(20).isLessThan(quantity('50020')) && quantity('50k').sub(20) == quantity('49980')");
        t("quantity('50k').add(20).sub(quantity('100k')).asInteger() == -49980");
        t("quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger() == 20");
        t("quantity('50k').asInteger() == 50000 && quantity('50000000G').isInteger() && quantity('50').isInteger()");
        t("!quantity('9999999999999999999999999999999999999G').isInteger() && !quantity('1.5').isInteger()");
        t("quantity('50.703k').asApproximateFloat() == 50703.0 && quantity('1.5Gi').asApproximateFloat() == 1610612736.0");
        t("quantity('9999999999999999999999999999999999999G').asApproximateFloat() > 1e45");
        t("sign(quantity('-1m')) == -1 && sign(quantity('0')) == 0 && sign(quantity('3Ki')) == 1");
        t("quantity('1e3') == quantity('1k') && quantity('1e2000000000').isGreaterThan(quantity('1E'))");
        t("type(quantity('1')) == kubernetes.Quantity");
    }

    #[test]
    fn errors_as_kubernetes_words_them() {
        let err = eval("quantity('10Mo')").unwrap_err();
        assert!(err.ends_with(FORMAT), "{err}");
        assert!(eval("quantity('10Mm')").unwrap_err().ends_with("unable to parse quantity's suffix"));
        let err = eval("quantity('9999999999999999999999999999999999999G').asInteger()").unwrap_err();
        assert!(err.ends_with("cannot convert value to integer"), "{err}");
        assert!(eval("quantity('1').sign()").is_err(), "sign is a global function");
        assert!(eval("quantity('9223372036854775807').add(1).isInteger()").is_ok(), "overflowing into a decimal");
        assert_eq!(eval("quantity('9223372036854775807').add(1).isInteger()"), Ok(Value::Bool(false)));
    }
}
