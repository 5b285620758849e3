//! Field splitting and number parsing shared by the text readers.
//!
//! Hand-written because the readers must sustain well over ten million lines
//! a second: no UTF-8 validation, no allocation, and decimal fractions are
//! converted to integer nanoseconds exactly (a float round trip would turn
//! `0.000011950` s into 11949 ns).

use crate::units::SECTOR_BYTES;

/// Why a numeric field did not parse; turned into a message by [`num_err`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumErr {
    Empty,
    Negative,
    Invalid,
    Overflow,
}

/// Splits on runs of spaces and tabs. Returns the number of fields found,
/// which may exceed `out.len()` (the extra fields are counted, not stored).
#[inline]
pub(crate) fn split_ws<'a>(line: &'a [u8], out: &mut [&'a [u8]]) -> usize {
    let mut n = 0;
    let mut i = 0;
    let len = line.len();
    while i < len {
        while i < len && (line[i] == b' ' || line[i] == b'\t') {
            i += 1;
        }
        if i == len {
            break;
        }
        let start = i;
        while i < len && line[i] != b' ' && line[i] != b'\t' {
            i += 1;
        }
        if n < out.len() {
            out[n] = &line[start..i];
        }
        n += 1;
    }
    n
}

/// Splits on `sep`, trimming blanks and double quotes around each field.
#[inline]
pub(crate) fn split_sep<'a>(line: &'a [u8], sep: u8, out: &mut [&'a [u8]]) -> usize {
    let mut n = 0;
    for field in line.split(|&b| b == sep) {
        if n < out.len() {
            out[n] = trim_field(field);
        }
        n += 1;
    }
    n
}

#[inline]
fn trim_field(mut f: &[u8]) -> &[u8] {
    while let [b' ' | b'\t' | b'"', rest @ ..] = f {
        f = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'"'] = f {
        f = rest;
    }
    f
}

/// A non-negative decimal integer.
#[inline]
pub(crate) fn parse_u64(s: &[u8]) -> Result<u64, NumErr> {
    let digits = match s {
        [] => return Err(NumErr::Empty),
        [b'-', rest @ ..] => {
            return Err(if rest.is_empty() { NumErr::Invalid } else { NumErr::Negative });
        }
        [b'+', rest @ ..] => rest,
        _ => s,
    };
    if digits.is_empty() {
        return Err(NumErr::Invalid);
    }
    // Up to 19 digits cannot overflow, so the common case skips the checks.
    if digits.len() <= 19 {
        let mut v: u64 = 0;
        for &b in digits {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                return Err(NumErr::Invalid);
            }
            v = v * 10 + d as u64;
        }
        return Ok(v);
    }
    let mut v: u64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(NumErr::Invalid);
        }
        v = v.checked_mul(10).and_then(|v| v.checked_add(d as u64)).ok_or(NumErr::Overflow)?;
    }
    Ok(v)
}

/// A non-negative decimal number (optional fraction, optional exponent)
/// multiplied by `10^pow10` and rounded to the nearest integer, computed
/// exactly in integers: `parse_scaled(b"1.5e-3", 9)` is 1_500_000.
pub(crate) fn parse_scaled(s: &[u8], pow10: u32) -> Result<u64, NumErr> {
    let body = match s {
        [] => return Err(NumErr::Empty),
        [b'-', rest @ ..] => {
            return Err(if rest.is_empty() { NumErr::Invalid } else { NumErr::Negative });
        }
        [b'+', rest @ ..] => rest,
        _ => s,
    };
    // Fast path: plain digits, the common case for integer fields.
    let mut mant: u128 = 0;
    let mut sig = 0u32; // significant digits kept in `mant`
    let mut exp: i64 = 0; // decimal exponent applied to `mant`
    let mut any_digit = false;
    let mut i = 0;
    let n = body.len();
    while i < n {
        let d = body[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        any_digit = true;
        if sig < 36 {
            mant = mant * 10 + d as u128;
            if mant != 0 {
                sig += 1;
            }
        } else {
            exp += 1;
        }
        i += 1;
    }
    if i < n && body[i] == b'.' {
        i += 1;
        while i < n {
            let d = body[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            any_digit = true;
            if sig < 36 {
                mant = mant * 10 + d as u128;
                if mant != 0 {
                    sig += 1;
                }
                exp -= 1;
            }
            i += 1;
        }
    }
    if !any_digit {
        return Err(NumErr::Invalid);
    }
    if i < n && (body[i] == b'e' || body[i] == b'E') {
        i += 1;
        let neg = match body.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        let mut e: i64 = 0;
        while i < n {
            let d = body[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            e = (e * 10 + d as i64).min(10_000);
            i += 1;
        }
        if i == start {
            return Err(NumErr::Invalid);
        }
        exp += if neg { -e } else { e };
    }
    if i != n {
        return Err(NumErr::Invalid);
    }
    if mant == 0 {
        return Ok(0);
    }
    let e = exp + pow10 as i64;
    let v: u128 = if e >= 0 {
        if e > 38 {
            return Err(NumErr::Overflow);
        }
        mant.checked_mul(10u128.pow(e as u32)).ok_or(NumErr::Overflow)?
    } else if e < -38 {
        0
    } else {
        let div = 10u128.pow((-e) as u32);
        (mant + div / 2) / div
    };
    u64::try_from(v).map_err(|_| NumErr::Overflow)
}

/// The message for a field that did not parse.
#[cold]
pub(crate) fn num_err(what: &str, value: &[u8], e: NumErr) -> String {
    let v = String::from_utf8_lossy(value);
    match e {
        NumErr::Empty => format!("{what} is empty"),
        NumErr::Negative => format!("negative {what} '{v}'"),
        NumErr::Invalid => format!("{what} '{v}' is not a number"),
        NumErr::Overflow => format!("{what} '{v}' is too large"),
    }
}

/// Field `idx` of `fields` parsed as an integer, with a message naming `what`.
#[inline]
pub(crate) fn int(what: &str, value: &[u8]) -> Result<u64, String> {
    parse_u64(value).map_err(|e| num_err(what, value, e))
}

/// A decimal field scaled by `10^pow10` (e.g. seconds to ns with 9).
#[inline]
pub(crate) fn scaled(what: &str, value: &[u8], pow10: u32) -> Result<u64, String> {
    parse_scaled(value, pow10).map_err(|e| num_err(what, value, e))
}

/// An integer multiplied by `factor` (e.g. FILETIME ticks to ns), checked.
#[inline]
pub(crate) fn int_times(what: &str, value: &[u8], factor: u64) -> Result<u64, String> {
    int(what, value)?.checked_mul(factor).ok_or_else(|| num_err(what, value, NumErr::Overflow))
}

/// Checks that a line has at least `need` fields.
#[inline]
pub(crate) fn need_fields(found: usize, need: usize) -> Result<(), String> {
    if found < need { Err(missing(found, need)) } else { Ok(()) }
}

#[cold]
fn missing(found: usize, need: usize) -> String {
    format!("expected {need} fields, found {found}")
}

/// A byte range widened to whole 512 B sectors: `(start, sectors)`.
///
/// Unaligned byte ranges are rounded outwards so the command covers every
/// sector the original request touched.
#[inline]
pub(crate) fn byte_range(offset: u64, size: u64) -> Result<(u64, u64), String> {
    let end = offset.checked_add(size).ok_or_else(|| format!("byte range {offset} + {size} overflows"))?;
    let start = offset / SECTOR_BYTES;
    Ok((start, end.div_ceil(SECTOR_BYTES) - start))
}

/// A sector range, checked so that `start + sectors` cannot overflow.
#[inline]
pub(crate) fn sector_range(start: u64, sectors: u64) -> Result<(u64, u64), String> {
    match start.checked_add(sectors).and_then(|e| e.checked_mul(SECTOR_BYTES)) {
        Some(_) => Ok((start, sectors)),
        None => Err(format!("sector range {start} + {sectors} overflows")),
    }
}

/// Lossy rendering of a field for error messages.
#[cold]
pub(crate) fn show(value: &[u8]) -> String {
    String::from_utf8_lossy(value).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_u64(b"0"), Ok(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), Err(NumErr::Overflow));
        assert_eq!(parse_u64(b"-5"), Err(NumErr::Negative));
        assert_eq!(parse_u64(b"-"), Err(NumErr::Invalid));
        assert_eq!(parse_u64(b"12a"), Err(NumErr::Invalid));
        assert_eq!(parse_u64(b""), Err(NumErr::Empty));
        assert_eq!(parse_u64(b"+7"), Ok(7));
    }

    #[test]
    fn scaled_decimals() {
        assert_eq!(parse_scaled(b"0.000011950", 9), Ok(11_950));
        assert_eq!(parse_scaled(b"1266874889.708658509", 9), Ok(1_266_874_889_708_658_509));
        assert_eq!(parse_scaled(b"13.191135", 6), Ok(13_191_135));
        assert_eq!(parse_scaled(b"7.3902e-05", 9), Ok(73_902));
        assert_eq!(parse_scaled(b"1E3", 0), Ok(1000));
        assert_eq!(parse_scaled(b"0.5", 0), Ok(1));
        assert_eq!(parse_scaled(b"0.4", 0), Ok(0));
        assert_eq!(parse_scaled(b".5", 1), Ok(5));
        assert_eq!(parse_scaled(b"5.", 1), Ok(50));
        assert_eq!(parse_scaled(b"128166385295514663", 2), Ok(12_816_638_529_551_466_300));
        assert_eq!(parse_scaled(b"1e30", 0), Err(NumErr::Overflow));
        assert_eq!(parse_scaled(b"1e-300", 9), Ok(0));
        assert_eq!(parse_scaled(b"-1.0", 9), Err(NumErr::Negative));
        assert_eq!(parse_scaled(b"1.2.3", 9), Err(NumErr::Invalid));
        assert_eq!(parse_scaled(b".", 9), Err(NumErr::Invalid));
        assert_eq!(parse_scaled(b"1e", 9), Err(NumErr::Invalid));
        assert_eq!(parse_scaled(b"nan", 9), Err(NumErr::Invalid));
        assert_eq!(parse_scaled(b"0.000000000000000000000000000000000000000001", 9), Ok(0));
    }

    #[test]
    fn splitting() {
        let mut f = [&b""[..]; 8];
        assert_eq!(split_ws(b"  8,0    3  1 ", &mut f), 3);
        assert_eq!(&f[..3], &[&b"8,0"[..], b"3", b"1"]);
        assert_eq!(split_sep(b"a, \"b\" ,,c", b',', &mut f), 4);
        assert_eq!(&f[..4], &[&b"a"[..], b"b", b"", b"c"]);
        let mut g = [&b""[..]; 2];
        assert_eq!(split_ws(b"a b c d", &mut g), 4);
    }

    #[test]
    fn byte_ranges() {
        assert_eq!(byte_range(4096, 4096), Ok((8, 8)));
        assert_eq!(byte_range(100, 1000), Ok((0, 3)));
        assert_eq!(byte_range(512, 0), Ok((1, 0)));
        assert!(byte_range(u64::MAX, 1).is_err());
        assert!(sector_range(u64::MAX / 512, 1).is_err());
    }
}
