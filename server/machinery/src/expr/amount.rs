//! A resource amount as resource.Quantity carries it outside CEL: its exact value and the format
//! its string was written in (which decides how it prints), the arithmetic quota usage needs, the
//! rounding limit checks use, and the canonical string Kubernetes prints (`500m`, `1Gi`, `2k`):
//! what quota status and the limit and quota refusals show.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::{BigInt, Sign};

use super::quantity::{parse, Quantity};

/// resource.Format: how a quantity prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Powers of ten with SI suffixes (`m`, `k`, `M`…).
    DecimalSI,
    /// Powers of two (`Ki`, `Mi`…).
    BinarySI,
    /// `e` exponents.
    DecimalExponent,
}

/// A value and its format.
#[derive(Clone, Debug)]
pub struct Amount {
    pub value: Quantity,
    pub format: Format,
}

impl PartialEq for Amount {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

const ZERO: Quantity = Quantity::Small { value: 0, scale: 0 };

impl Amount {
    /// resource.ParseQuantity: the value, and the format its suffix names.
    pub fn parse(s: &str) -> Result<Amount, &'static str> {
        let value = parse(s)?;
        let suffix = s.trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.'));
        let format = match suffix.as_bytes().first() {
            // `E` alone is exa; with digits after it, an exponent.
            Some(b'e' | b'E') if suffix.len() > 1 => Format::DecimalExponent,
            _ if suffix.ends_with('i') => Format::BinarySI,
            _ => Format::DecimalSI,
        };
        Ok(Amount { value, format })
    }

    /// A whole count (resource.NewQuantity(n, DecimalSI)).
    pub fn count(n: i64) -> Amount {
        Amount { value: Quantity::Small { value: n, scale: 0 }, format: Format::DecimalSI }
    }

    /// Zero, as quota usage starts.
    pub fn zero() -> Amount {
        Amount::count(0)
    }

    pub fn sign(&self) -> i64 {
        self.value.sign()
    }

    pub fn is_zero(&self) -> bool {
        self.sign() == 0
    }

    pub fn compare(&self, other: &Amount) -> Ordering {
        self.value.compare(&other.value)
    }

    /// Quantity.Add: a zero takes the other's format.
    pub fn plus(&self, other: &Amount) -> Amount {
        self.combine(other, false)
    }

    /// Quantity.Sub.
    pub fn minus(&self, other: &Amount) -> Amount {
        self.combine(other, true)
    }

    fn combine(&self, other: &Amount, subtract: bool) -> Amount {
        let format = if self.is_zero() { other.format } else { self.format };
        // Only an absurd exponent fails, where the sum cannot be computed exactly; keep the left.
        let value = self.value.add(&other.value, subtract).unwrap_or_else(|_| self.value.clone());
        Amount { value, format }
    }

    /// Quantity.ScaledValue: the value in units of `10^scale`, rounded up, saturating
    /// (`Value()` is scale 0, `MilliValue()` scale -3).
    pub fn scaled(&self, scale: i64) -> i64 {
        let (n, exp) = self.value.decimal();
        let shifted = if exp >= scale {
            match u32::try_from(exp - scale) {
                Ok(by) if by <= 40 => n * BigInt::from(10u8).pow(by),
                _ => return if n.sign() == Sign::Minus { i64::MIN } else { i64::MAX },
            }
        } else {
            match u32::try_from(scale - exp) {
                Ok(by) if by <= 40 => ceil_div(&n, &BigInt::from(10u8).pow(by)),
                _ => BigInt::from(i64::from(n.sign() == Sign::Plus)),
            }
        };
        i64::try_from(&shifted).unwrap_or(if shifted.sign() == Sign::Minus { i64::MIN } else { i64::MAX })
    }

    /// Quantity.RoundUp(0): the value rounded up to a whole number, in its format.
    pub fn round_up(&self) -> Amount {
        if self.value.is_integer() {
            return self.clone();
        }
        let (n, exp) = self.value.decimal();
        let unit = BigInt::from(10u8).pow(u32::try_from(-exp).unwrap_or(0));
        Amount { value: Quantity::Big { unscaled: ceil_div(&n, &unit), exp: 0 }, format: self.format }
    }
}

fn ceil_div(n: &BigInt, d: &BigInt) -> BigInt {
    let (q, r) = (n / d, n % d);
    if r.sign() == Sign::Plus { q + 1 } else { q }
}

/// `n` without the factors of `base` at its end, and how many there were.
fn remove_factors(mut n: BigInt, base: u32) -> (BigInt, i64) {
    let mut times = 0;
    let base = BigInt::from(base);
    let zero = BigInt::from(0u8);
    while n.magnitude() >= base.magnitude() && &n % &base == zero {
        n /= &base;
        times += 1;
    }
    (n, times)
}

const DECIMAL: [(i64, &str); 10] = [(-9, "n"), (-6, "u"), (-3, "m"), (0, ""), (3, "k"), (6, "M"), (9, "G"), (12, "T"), (15, "P"), (18, "E")];
const BINARY: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// Quantity.String: the canonical form.
impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_zero() {
            return f.write_str("0");
        }
        let (n, exp) = self.value.decimal();
        let small = self.value.compare(&Quantity::Small { value: 1024, scale: 0 }) == Ordering::Less
            && self.value.compare(&Quantity::Small { value: -1024, scale: 0 }) == Ordering::Greater;
        // A binary amount below 1Ki, or with a fraction, prints in decimal (no rounding).
        if self.format == Format::BinarySI && !small && self.value.is_integer() && exp <= 40 {
            let unit = BigInt::from(10u8).pow(u32::try_from(exp.unsigned_abs()).unwrap_or(0));
            let whole = if exp >= 0 { n * unit } else { n / unit };
            let (amount, times) = remove_factors(whole, 1024);
            return write!(f, "{amount}{}", BINARY.get(times as usize).copied().unwrap_or(""));
        }
        let (mut amount, times) = remove_factors(n, 10);
        let mut exponent = exp + times;
        while exponent % 3 != 0 {
            amount *= 10;
            exponent -= 1;
        }
        match self.format {
            Format::DecimalExponent if exponent == 0 => write!(f, "{amount}"),
            Format::DecimalExponent => write!(f, "{amount}e{exponent}"),
            _ => write!(f, "{amount}{}", DECIMAL.iter().find(|(e, _)| *e == exponent).map_or("", |(_, s)| s)),
        }
    }
}

impl Default for Amount {
    fn default() -> Self {
        Amount { value: ZERO, format: Format::DecimalSI }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(s: &str) -> String {
        Amount::parse(s).unwrap().to_string()
    }

    #[test]
    fn prints_as_resource_quantity_does() {
        for (given, printed) in [
            ("0.5", "500m"),
            ("1000m", "1"),
            ("100m", "100m"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("512Ki", "512Ki"),
            ("1000Ki", "1000Ki"),
            ("0.5Ki", "512"),
            ("1G", "1G"),
            ("1500M", "1500M"),
            ("12e3", "12e3"),
            ("1e3", "1e3"),
            ("2000", "2k"),
            ("10", "10"),
            ("0", "0"),
            ("0Gi", "0"),
            ("1.5Gi", "1536Mi"),
            ("100n", "100n"),
            ("-2k", "-2k"),
            ("1E", "1E"),
        ] {
            assert_eq!(canonical(given), printed, "{given}");
        }
    }

    #[test]
    fn adds_in_the_format_of_the_left_unless_it_is_zero() {
        let sum = Amount::zero().plus(&Amount::parse("1Gi").unwrap());
        assert_eq!(sum.to_string(), "1Gi");
        let sum = Amount::parse("500m").unwrap().plus(&Amount::parse("1").unwrap());
        assert_eq!(sum.to_string(), "1500m");
        let sum = Amount::parse("1Gi").unwrap().plus(&Amount::parse("1G").unwrap());
        assert_eq!(sum.to_string(), "2073741824");
        assert_eq!(Amount::parse("1").unwrap().minus(&Amount::parse("250m").unwrap()).to_string(), "750m");
    }

    #[test]
    fn scales_and_rounds_up() {
        assert_eq!(Amount::parse("1500m").unwrap().scaled(0), 2);
        assert_eq!(Amount::parse("1500m").unwrap().scaled(-3), 1500);
        assert_eq!(Amount::parse("1Gi").unwrap().scaled(-3), 1073741824000);
        assert_eq!(Amount::parse("1n").unwrap().scaled(-3), 1);
        assert_eq!(Amount::parse("1.5").unwrap().round_up().to_string(), "2");
        assert_eq!(Amount::parse("1Gi").unwrap().round_up().to_string(), "1Gi");
    }
}
