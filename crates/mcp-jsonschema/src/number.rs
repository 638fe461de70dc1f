//! Numbers as JSON has them: `i64`, `u64` or `f64`, compared by value without overflow.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::Number;

/// A JSON number, in the representation `serde_json` parsed it into.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Num {
    I(i64),
    U(u64),
    F(f64),
}

impl Num {
    pub(crate) fn of(n: &Number) -> Num {
        if let Some(i) = n.as_i64() {
            Num::I(i)
        } else if let Some(u) = n.as_u64() {
            Num::U(u)
        } else {
            Num::F(n.as_f64().unwrap_or(f64::NAN))
        }
    }

    fn int(self) -> Option<i128> {
        match self {
            Num::I(i) => Some(i128::from(i)),
            Num::U(u) => Some(i128::from(u)),
            Num::F(_) => None,
        }
    }

    fn float(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::U(u) => u as f64,
            Num::F(f) => f,
        }
    }

    /// Whether the value is a whole number (`1.0` is).
    pub(crate) fn is_integer(self) -> bool {
        match self {
            Num::I(_) | Num::U(_) => true,
            Num::F(f) => f.is_finite() && f.fract() == 0.0,
        }
    }

    pub(crate) fn is_zero(self) -> bool {
        match self {
            Num::I(i) => i == 0,
            Num::U(u) => u == 0,
            Num::F(f) => f == 0.0,
        }
    }

    pub(crate) fn is_positive(self) -> bool {
        match self {
            Num::I(i) => i > 0,
            Num::U(u) => u > 0,
            Num::F(f) => f > 0.0,
        }
    }
}

/// Compares two numbers by value (`None` only for NaN, which JSON cannot hold).
pub(crate) fn compare(a: Num, b: Num) -> Option<Ordering> {
    match (a.int(), b.int()) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(x), None) => compare_int_float(x, b.float()),
        (None, Some(y)) => compare_int_float(y, a.float()).map(Ordering::reverse),
        (None, None) => a.float().partial_cmp(&b.float()),
    }
}

/// Compares an integer (within the `i64`/`u64` range) with a float, exactly.
fn compare_int_float(x: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    // 2^64 and -2^63 are exact in f64; beyond them every i64/u64 is on one side.
    if f >= 18_446_744_073_709_551_616.0 {
        return Some(Ordering::Less);
    }
    if f < -9_223_372_036_854_775_808.0 {
        return Some(Ordering::Greater);
    }
    let floor = f.floor();
    // In range, so the cast is exact.
    let whole = floor as i128;
    Some(match x.cmp(&whole) {
        Ordering::Equal if f > floor => Ordering::Less,
        other => other,
    })
}

pub(crate) fn equal(a: Num, b: Num) -> bool {
    compare(a, b) == Some(Ordering::Equal)
}

/// A number as decimal digits and a power of ten: `value = digits * 10^exponent` (sign dropped).
/// Floats are read in their shortest round-trip decimal form, the digits the JSON text had.
fn decimal(n: Num) -> Option<(u128, i32)> {
    match n {
        Num::I(i) => Some((u128::from(i.unsigned_abs()), 0)),
        Num::U(u) => Some((u128::from(u), 0)),
        Num::F(f) => {
            if !f.is_finite() {
                return None;
            }
            let mut buf = StackText::default();
            write!(buf, "{:e}", f.abs()).ok()?;
            let text = buf.as_str();
            let (mantissa, exponent) = text.split_once('e')?;
            let mut exponent: i32 = exponent.parse().ok()?;
            let mut digits: u128 = 0;
            let mut after_point = false;
            for b in mantissa.bytes() {
                match b {
                    b'.' => after_point = true,
                    b'0'..=b'9' => {
                        digits = digits.checked_mul(10)?.checked_add(u128::from(b - b'0'))?;
                        if after_point {
                            exponent -= 1;
                        }
                    }
                    _ => return None,
                }
            }
            while digits != 0 && digits % 10 == 0 {
                digits /= 10;
                exponent += 1;
            }
            Some((digits, exponent))
        }
    }
}

/// `base^exp mod m`, for `m < 2^64` (so products stay below 2^128).
fn pow_mod(mut base: u128, mut exp: u32, m: u128) -> u128 {
    let mut result = 1 % m;
    base %= m;
    while exp > 0 {
        if exp & 1 == 1 {
            result = result * base % m;
        }
        base = base * base % m;
        exp >>= 1;
    }
    result
}

/// Whether `value / multiple` is an integer, reading both as the decimals JSON wrote them as
/// (so `0.0075` is a multiple of `0.0001` although neither is exact in binary). `multiple` is
/// positive.
pub(crate) fn is_multiple_of(value: Num, multiple: Num) -> bool {
    if value.is_zero() {
        return true;
    }
    let (Some((a, p)), Some((b, q))) = (decimal(value), decimal(multiple)) else {
        return false;
    };
    if b == 0 {
        return false;
    }
    // value / multiple = (a / b) * 10^(p - q)
    let k = i64::from(p) - i64::from(q);
    if k >= 0 {
        // b divides a * 10^k. Both a and b have at most 20 digits (< 2^67): reduce first.
        if b > u128::from(u64::MAX) {
            // Only for u64 instances past 2^64, which serde_json does not produce.
            return a % b == 0 && k == 0;
        }
        let exp = u32::try_from(k).unwrap_or(u32::MAX);
        (a % b) * pow_mod(10, exp, b) % b == 0
    } else {
        let Ok(places) = u32::try_from(-k) else {
            return false;
        };
        match 10u128
            .checked_pow(places)
            .and_then(|scale| b.checked_mul(scale))
        {
            Some(divisor) => a % divisor == 0,
            // A divisor past 2^128 is larger than `a`, which is not zero.
            None => false,
        }
    }
}

/// A fixed buffer for formatting one float without allocating.
struct StackText {
    buf: [u8; 64],
    len: usize,
}

impl Default for StackText {
    fn default() -> Self {
        StackText {
            buf: [0; 64],
            len: 0,
        }
    }
}

impl StackText {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: serde_json::Value) -> Num {
        Num::of(v.as_number().unwrap())
    }

    #[test]
    fn compares_across_representations() {
        use serde_json::json;
        assert!(equal(n(json!(1)), n(json!(1.0))));
        assert_eq!(
            compare(n(json!(u64::MAX)), n(json!(-1))),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare(n(json!(i64::MIN)), n(json!(u64::MAX))),
            Some(Ordering::Less)
        );
        // u64::MAX as f64 rounds up to 2^64: the integer is smaller.
        assert_eq!(
            compare(n(json!(u64::MAX)), n(json!(18446744073709551615.0))),
            Some(Ordering::Less)
        );
        assert_eq!(compare(n(json!(3)), n(json!(2.5))), Some(Ordering::Greater));
        assert_eq!(compare(n(json!(2)), n(json!(2.5))), Some(Ordering::Less));
        assert_eq!(compare(n(json!(-3)), n(json!(-2.5))), Some(Ordering::Less));
        assert_eq!(
            compare(n(json!(1e300)), n(json!(5))),
            Some(Ordering::Greater)
        );
        assert_eq!(compare(n(json!(-1e300)), n(json!(5))), Some(Ordering::Less));
    }

    #[test]
    fn multiples_are_decimal() {
        use serde_json::json;
        assert!(is_multiple_of(n(json!(0.0075)), n(json!(0.0001))));
        assert!(is_multiple_of(n(json!(19.99)), n(json!(0.01))));
        assert!(!is_multiple_of(n(json!(0.00751)), n(json!(0.0001))));
        assert!(is_multiple_of(n(json!(10)), n(json!(2))));
        assert!(!is_multiple_of(n(json!(7)), n(json!(2))));
        assert!(is_multiple_of(n(json!(4.0)), n(json!(2))));
        assert!(!is_multiple_of(n(json!(4.5)), n(json!(2))));
        assert!(is_multiple_of(n(json!(4.5)), n(json!(1.5))));
        assert!(is_multiple_of(n(json!(i64::MIN)), n(json!(2))));
        assert!(is_multiple_of(n(json!(u64::MAX)), n(json!(5))));
        assert!(!is_multiple_of(n(json!(u64::MAX)), n(json!(2))));
        assert!(is_multiple_of(n(json!(1e300)), n(json!(0.1))));
        assert!(!is_multiple_of(n(json!(1e300)), n(json!(3))));
        assert!(!is_multiple_of(n(json!(1e-300)), n(json!(1e10))));
        assert!(is_multiple_of(n(json!(0)), n(json!(0.3))));
        assert!(is_multiple_of(n(json!(-0.3)), n(json!(0.1))));
    }
}
