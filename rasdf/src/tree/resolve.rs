//! Plain scalars resolved as PyYAML's YAML 1.1 `SafeLoader` does, which is what the
//! reference library uses (reference notes 3.2), not as YAML 1.2 parsers do.
//!
//! | text | value |
//! |---|---|
//! | `yes`, `On`, `TRUE` | bool (`y`, `n` stay strings) |
//! | `017`, `0x1F`, `0b101`, `1_000`, `1:30` | int (15, 31, 5, 1000, 90) |
//! | `1.5`, `.5`, `1.0e+5`, `1:30.5`, `.inf`, `.NaN` | float (`1e5` and `1.0e5` stay strings) |
//! | `~`, `null`, empty | null |
//! | `2020-01-01`, `2001-12-14t21:59:43.10-05:00` | timestamp |

use num_bigint::BigInt;

/// A resolved plain scalar.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// `~`, `null`, `Null`, `NULL`, or nothing.
    Null,
    /// A YAML 1.1 boolean word.
    Bool(bool),
    /// An integer that fits in 64 bits.
    Int(i64),
    /// An integer that does not.
    BigInt(BigInt),
    /// A float.
    Float(f64),
    /// A date or date-time; the text is kept.
    Timestamp,
    /// The merge key `<<`.
    Merge,
    /// The value key `=`.
    Value,
    /// Anything else: a string.
    Str,
}

/// Resolves a plain (unquoted, untagged) scalar.
pub fn resolve_plain(s: &str) -> Resolved {
    let Some(&first) = s.as_bytes().first() else {
        return Resolved::Null;
    };
    match first {
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' => {
            if let Some(b) = resolve_bool(s) {
                return Resolved::Bool(b);
            }
            if matches!(s, "null" | "Null" | "NULL") {
                return Resolved::Null;
            }
            Resolved::Str
        }
        b'~' if s == "~" => Resolved::Null,
        b'<' if s == "<<" => Resolved::Merge,
        b'=' if s == "=" => Resolved::Value,
        b'-' | b'+' | b'.' | b'0'..=b'9' => plain_decimal(s).unwrap_or_else(|| resolve_number_like(s)),
        _ => Resolved::Str,
    }
}

/// `!!binary` text decoded as PyYAML decodes it (`base64.decodebytes`, CPython's
/// non-strict `a2b_base64`): characters outside the alphabet (line breaks, spaces, any
/// other ASCII) are skipped, unused bits of the last character are ignored, and the
/// first complete padding ends the data. `None` where Python fails: a character past
/// ASCII, one data character too many, or missing padding.
pub fn python_base64(text: &str) -> Option<Vec<u8>> {
    if !text.is_ascii() {
        return None;
    }
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut quad, mut pads, mut left) = (0u8, 0u8, 0u8);
    for &c in text.as_bytes() {
        if c == b'=' {
            if quad >= 2 {
                pads += 1;
                if quad + pads >= 4 {
                    return Some(out);
                }
            }
            continue;
        }
        let Some(v) = value(c) else { continue };
        pads = 0;
        match quad {
            0 => left = v,
            1 => {
                out.push(left << 2 | v >> 4);
                left = v & 0x0f;
            }
            2 => {
                out.push(left << 4 | v >> 2);
                left = v & 0x03;
            }
            _ => out.push(left << 6 | v),
        }
        quad = (quad + 1) % 4;
    }
    (quad == 0).then_some(out)
}

/// A plain scalar that starts as a number may be: a float, an int, a timestamp, or a
/// string.
fn resolve_number_like(s: &str) -> Resolved {
    if is_float(s)
        && let Some(f) = construct_float(s)
    {
        return Resolved::Float(f);
    }
    if is_int(s)
        && let Some(i) = construct_int(s)
    {
        return i;
    }
    if s.as_bytes().first().is_some_and(u8::is_ascii_digit) && is_timestamp(s) {
        return Resolved::Timestamp;
    }
    Resolved::Str
}

/// The usual numbers, in one pass: a decimal int (`-12`, no leading zero) or float
/// (`1.5`, `-0.25e+3`) without `_`, whose value is exact without a full float parser:
/// at most 19 digits, and for a float a mantissa below 2^53 scaled by at most 10^22, so
/// one multiplication or division rounds it correctly (as Python's `float` does).
/// `None` for anything else, left to the general rules.
fn plain_decimal(s: &str) -> Option<Resolved> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
        1e20, 1e21, 1e22,
    ];
    let b = s.as_bytes();
    let neg = b.first() == Some(&b'-');
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let int_start = i;
    let mut mantissa: u64 = 0;
    let int_digits = digits_into(b, &mut i, &mut mantissa);
    if int_digits == 0 || int_digits > 19 {
        return None;
    }
    if i == b.len() {
        // An int: `0`, or no leading zero (octal), and within i64.
        if int_digits > 1 && b[int_start] == b'0' {
            return None;
        }
        let v = i64::try_from(mantissa).ok()?;
        return Some(Resolved::Int(if neg { -v } else { v }));
    }
    if b[i] != b'.' {
        return None;
    }
    i += 1;
    let frac_start = i;
    if int_digits + digits_into(b, &mut i, &mut mantissa) > 19 {
        return None;
    }
    let mut exp10 = -i64::try_from(i - frac_start).ok()?;
    if i < b.len() {
        // `[eE][-+][0-9]+`, the sign required (`1.0e5` is a string).
        if !matches!(b[i], b'e' | b'E') || !matches!(b.get(i + 1), Some(b'-' | b'+')) {
            return None;
        }
        let exp_neg = b[i + 1] == b'-';
        let exp_digits =
            b.get(i + 2..).filter(|d| !d.is_empty() && d.len() <= 4 && d.iter().all(u8::is_ascii_digit))?;
        let e = exp_digits.iter().fold(0i64, |e, d| e * 10 + i64::from(d - b'0'));
        exp10 += if exp_neg { -e } else { e };
    }
    if mantissa >= 1 << 53 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let m = mantissa as f64;
    let scale = *POW10.get(usize::try_from(exp10.unsigned_abs()).ok()?)?;
    let v = if exp10 < 0 { m / scale } else { m * scale };
    Some(Resolved::Float(if neg { -v } else { v }))
}

/// The decimal digits of `b` from `*i` on, appended to `mantissa` (exact while it holds
/// at most 19 digits, which callers check); moves `*i` past them and returns how many.
fn digits_into(b: &[u8], i: &mut usize, mantissa: &mut u64) -> usize {
    let start = *i;
    while let Some(&c) = b.get(*i).filter(|c| c.is_ascii_digit()) {
        *mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
        *i += 1;
    }
    *i - start
}

/// The YAML 1.1 bool words PyYAML knows (no `y`/`n`).
pub fn resolve_bool(s: &str) -> Option<bool> {
    match s {
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => Some(true),
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

fn strip_sign(s: &str) -> (bool, &str) {
    match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    }
}

fn all(s: &str, f: impl Fn(u8) -> bool) -> bool {
    s.bytes().all(f)
}

/// `[0-5]?[0-9]`
fn is_base60_part(p: &str) -> bool {
    match p.as_bytes() {
        [d] => d.is_ascii_digit(),
        [a, b] => (b'0'..=b'5').contains(a) && b.is_ascii_digit(),
        _ => false,
    }
}

/// PyYAML's int regex:
/// `[-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+ |
/// [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+`
pub fn is_int(s: &str) -> bool {
    let (_, u) = strip_sign(s);
    if let Some(r) = u.strip_prefix("0b") {
        return !r.is_empty() && all(r, |b| matches!(b, b'0' | b'1' | b'_'));
    }
    if let Some(r) = u.strip_prefix("0x") {
        return !r.is_empty() && all(r, |b| b.is_ascii_hexdigit() || b == b'_');
    }
    if u == "0" {
        return true;
    }
    if let Some(r) = u.strip_prefix('0') {
        return !r.is_empty() && all(r, |b| matches!(b, b'0'..=b'7' | b'_'));
    }
    let mut parts = u.split(':');
    let head = parts.next().unwrap_or("");
    let head_ok = head.as_bytes().first().is_some_and(|b| (b'1'..=b'9').contains(b))
        && all(head, |b| b.is_ascii_digit() || b == b'_');
    if !head_ok {
        return false;
    }
    parts.all(is_base60_part)
}

/// The NaN PyYAML makes of `.nan`: `-inf / inf`, computed on this machine as PyYAML
/// computes it (its sign bit is set on x86, where the division gives the "default NaN";
/// not on Arm), so that arrays and trees carry the reference's very bits.
pub fn pyyaml_nan() -> f64 {
    let inf = std::hint::black_box(f64::INFINITY);
    -inf / inf
}

/// PyYAML's float regex:
/// `[-+]?([0-9][0-9_]*)\.[0-9_]*([eE][-+][0-9]+)? | \.[0-9][0-9_]*([eE][-+][0-9]+)? |
/// [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]* | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)`
pub fn is_float(s: &str) -> bool {
    if matches!(s, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let (signed, u) = {
        let (neg, u) = strip_sign(s);
        (neg || s.starts_with('+'), u)
    };
    if matches!(u, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    // Split off an exponent `[eE][-+][0-9]+`.
    let exp_ok = |e: &str| -> bool {
        let b = e.as_bytes();
        b.len() >= 3
            && matches!(b[0], b'e' | b'E')
            && matches!(b[1], b'-' | b'+')
            && all(&e[2..], |c| c.is_ascii_digit())
    };
    if let Some(rest) = u.strip_prefix('.') {
        // `\.[0-9][0-9_]*(exp)?`, unsigned only.
        if signed {
            return false;
        }
        let end = rest.find(['e', 'E']).unwrap_or(rest.len());
        let (digits, exp) = rest.split_at(end);
        return digits.as_bytes().first().is_some_and(u8::is_ascii_digit)
            && all(digits, |b| b.is_ascii_digit() || b == b'_')
            && (exp.is_empty() || exp_ok(exp));
    }
    let Some(dot) = u.find('.') else { return false };
    let (int_part, frac_exp) = u.split_at(dot);
    let frac_exp = &frac_exp[1..];
    if int_part.contains(':') {
        // Sexagesimal: `[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*`, no exponent.
        let mut parts = int_part.split(':');
        let head = parts.next().unwrap_or("");
        return head.as_bytes().first().is_some_and(u8::is_ascii_digit)
            && all(head, |b| b.is_ascii_digit() || b == b'_')
            && parts.all(is_base60_part)
            && all(frac_exp, |b| b.is_ascii_digit() || b == b'_');
    }
    let end = frac_exp.find(['e', 'E']).unwrap_or(frac_exp.len());
    let (frac, exp) = frac_exp.split_at(end);
    int_part.as_bytes().first().is_some_and(u8::is_ascii_digit)
        && all(int_part, |b| b.is_ascii_digit() || b == b'_')
        && all(frac, |b| b.is_ascii_digit() || b == b'_')
        && (exp.is_empty() || exp_ok(exp))
}

/// PyYAML's `construct_yaml_float` for text that [`is_float`] accepted.
pub fn construct_float(s: &str) -> Option<f64> {
    // The usual case, `1.5` or `-2.0e+10`: Rust's parser takes it as is.
    if !s.bytes().any(|b| matches!(b, b'_' | b':' | b'i' | b'I' | b'n' | b'N'))
        && let Ok(f) = s.parse::<f64>()
    {
        return Some(f);
    }
    let v: String = s.chars().filter(|&c| c != '_').collect::<String>().to_ascii_lowercase();
    let (neg, u) = strip_sign(&v);
    let sign = if neg { -1.0 } else { 1.0 };
    if u == ".inf" {
        return Some(sign * f64::INFINITY);
    }
    if u == ".nan" {
        return Some(pyyaml_nan());
    }
    if u.contains(':') {
        let mut value = 0.0;
        for part in u.split(':') {
            value = value * 60.0 + normalize_float(part).parse::<f64>().ok()?;
        }
        return Some(sign * value);
    }
    normalize_float(u).parse::<f64>().ok().map(|f| sign * f)
}

/// Makes Python float literals (`1.`, `.5`, `1.e+5`) acceptable to Rust's parser.
fn normalize_float(s: &str) -> String {
    let mut t = s.to_string();
    if t.starts_with('.') {
        t.insert(0, '0');
    }
    if let Some(i) = t.find(".e") {
        t.insert(i + 1, '0');
    }
    if t.ends_with('.') {
        t.push('0');
    }
    t
}

/// PyYAML's `construct_yaml_int` on any text, as an explicit `!!int` gives it (no
/// pattern checked first): Python's `int()` of each part, which takes spaces around the
/// digits and the base's own prefix (`!!int "0o17"` is 15, `!!int |` of `0` and a break
/// is 0).
pub fn construct_int_explicit(s: &str) -> Option<Resolved> {
    let v: String = s.chars().filter(|&c| c != '_').collect();
    let (neg, u) = strip_sign(&v);
    let py_int = |t: &str, radix: u32| -> Option<BigInt> {
        let t = t.trim_matches(|c: char| c.is_whitespace());
        let (neg, t) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let prefix = match radix {
            2 => ["0b", "0B"],
            8 => ["0o", "0O"],
            16 => ["0x", "0X"],
            _ => ["", ""],
        };
        let t = prefix.iter().filter(|p| !p.is_empty()).find_map(|p| t.strip_prefix(p)).unwrap_or(t);
        if t.is_empty() || !t.chars().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        let n = BigInt::parse_bytes(t.as_bytes(), radix)?;
        Some(if neg { -n } else { n })
    };
    let big = if u == "0" {
        BigInt::from(0)
    } else if let Some(r) = u.strip_prefix("0b") {
        py_int(r, 2)?
    } else if let Some(r) = u.strip_prefix("0x") {
        py_int(r, 16)?
    } else if u.starts_with('0') {
        py_int(u, 8)?
    } else if u.contains(':') {
        let mut value = BigInt::from(0);
        for part in u.split(':') {
            value = value * 60 + py_int(part, 10)?;
        }
        value
    } else {
        py_int(u, 10)?
    };
    let big = if neg { -big } else { big };
    Some(match i64::try_from(&big) {
        Ok(i) => Resolved::Int(i),
        Err(_) => Resolved::BigInt(big),
    })
}

/// PyYAML's `construct_yaml_int` for text that [`is_int`] accepted.
pub fn construct_int(s: &str) -> Option<Resolved> {
    // The usual case: a decimal that fits in 64 bits (no `_`, `:`, `0x`, `0b` or octal `0`).
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit())
        && let Ok(i) = s.parse::<i64>()
    {
        return Some(Resolved::Int(i));
    }
    let v: String = s.chars().filter(|&c| c != '_').collect();
    let (neg, u) = strip_sign(&v);
    let big = if u == "0" {
        BigInt::from(0)
    } else if let Some(r) = u.strip_prefix("0b") {
        BigInt::parse_bytes(r.as_bytes(), 2)?
    } else if let Some(r) = u.strip_prefix("0x") {
        BigInt::parse_bytes(r.as_bytes(), 16)?
    } else if u.starts_with('0') {
        BigInt::parse_bytes(u.as_bytes(), 8)?
    } else if u.contains(':') {
        let mut value = BigInt::from(0);
        for part in u.split(':') {
            value = value * 60 + BigInt::parse_bytes(part.as_bytes(), 10)?;
        }
        value
    } else {
        BigInt::parse_bytes(u.as_bytes(), 10)?
    };
    let big = if neg { -big } else { big };
    Some(match i64::try_from(&big) {
        Ok(i) => Resolved::Int(i),
        Err(_) => Resolved::BigInt(big),
    })
}

/// PyYAML's timestamp regex: `YYYY-MM-DD`, or a date, `T`/`t`/blanks, `H:MM:SS`, an
/// optional fraction and an optional zone (`Z` or `±H[:MM]`).
pub fn is_timestamp(s: &str) -> bool {
    timestamp_fields(s).is_some()
}

/// The parts of a timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timestamp {
    /// Year, month, day.
    pub date: (u32, u32, u32),
    /// Hour, minute, second, microsecond, when a time is given.
    pub time: Option<(u32, u32, u32, u32)>,
    /// Offset from UTC in minutes, when a zone is given.
    pub offset_minutes: Option<i32>,
}

impl Timestamp {
    /// ISO 8601 as Python's `isoformat()` writes the value PyYAML builds.
    pub fn isoformat(&self) -> String {
        let (y, mo, d) = self.date;
        let mut s = format!("{y:04}-{mo:02}-{d:02}");
        if let Some((h, mi, sec, us)) = self.time {
            s += &format!("T{h:02}:{mi:02}:{sec:02}");
            if us != 0 {
                s += &format!(".{us:06}");
            }
            if let Some(off) = self.offset_minutes {
                let sign = if off < 0 { '-' } else { '+' };
                let a = off.unsigned_abs();
                s += &format!("{sign}{:02}:{:02}", a / 60, a % 60);
            }
        }
        s
    }
}

fn digits(s: &str, min: usize, max: usize) -> Option<u32> {
    (s.len() >= min && s.len() <= max && all(s, |b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

/// A timestamp's value, as PyYAML builds it: `None` when the text does not have a
/// timestamp's shape ([`is_timestamp`]) or names no real date and time (Python's
/// `datetime` refuses it: `2001-02-29`, `24:00:00`, a leap second).
pub fn parse_timestamp(s: &str) -> Option<Timestamp> {
    timestamp_fields(s).filter(python_accepts)
}

/// The fields of a text with a timestamp's shape, whatever their values.
fn timestamp_fields(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() < 8 || b[4] != b'-' {
        return None;
    }
    let year = digits(&s[..4], 4, 4)?;
    let rest = &s[5..];
    let m_end = rest.find('-')?;
    let month = digits(&rest[..m_end], 1, 2)?;
    let rest = &rest[m_end + 1..];
    let d_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let day = digits(&rest[..d_end], 1, 2)?;
    let rest = &rest[d_end..];
    if rest.is_empty() {
        // A date alone needs two-digit month and day.
        if s.len() != 10 {
            return None;
        }
        return Some(Timestamp { date: (year, month, day), time: None, offset_minutes: None });
    }
    let rest = if let Some(r) = rest.strip_prefix(['T', 't']) {
        r
    } else {
        let r = rest.trim_start_matches([' ', '\t']);
        if r.len() == rest.len() {
            return None;
        }
        r
    };
    let h_end = rest.find(':')?;
    let hour = digits(&rest[..h_end], 1, 2)?;
    let rest = &rest[h_end + 1..];
    let minute = digits(rest.get(..2)?, 2, 2)?;
    let rest = rest.get(2..)?.strip_prefix(':')?;
    let second = digits(rest.get(..2)?, 2, 2)?;
    let mut rest = &rest[2..];
    let mut micro = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        let frac = &r[..end];
        let mut f: String = frac.chars().take(6).collect();
        while f.len() < 6 {
            f.push('0');
        }
        micro = f.parse().ok()?;
        rest = &r[end..];
    }
    let rest = rest.trim_start_matches([' ', '\t']);
    let offset = if rest.is_empty() {
        None
    } else if rest == "Z" {
        Some(0)
    } else {
        let (neg, r) = match rest.as_bytes()[0] {
            b'-' => (true, &rest[1..]),
            b'+' => (false, &rest[1..]),
            _ => return None,
        };
        let (h, m) = match r.find(':') {
            Some(i) => (digits(&r[..i], 1, 2)?, digits(&r[i + 1..], 2, 2)?),
            None => (digits(r, 1, 2)?, 0),
        };
        let total = i32::try_from(h * 60 + m).ok()?;
        Some(if neg { -total } else { total })
    };
    Some(Timestamp { date: (year, month, day), time: Some((hour, minute, second, micro)), offset_minutes: offset })
}

/// Whether Python's `datetime` takes the fields (PyYAML builds one, and the reference
/// fails with a `ValueError` where it cannot): a real date from year 1, a time of day
/// without leap seconds, an offset under a day.
fn python_accepts(ts: &Timestamp) -> bool {
    let (year, month, day) = ts.date;
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    let date_ok = year >= 1 && (1..=days).contains(&day);
    let time_ok = ts.time.is_none_or(|(h, m, s, _)| h < 24 && m < 60 && s < 60);
    date_ok && time_ok && ts.offset_minutes.is_none_or(|o| o.abs() < 24 * 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_python_decodes_it() {
        // (Each case checked against `base64.decodebytes` of CPython 3.11.)
        let cases: &[(&str, Option<&[u8]>)] = &[
            ("aGVsbG8=", Some(b"hello")),
            ("aGVs\nbG8=\n", Some(b"hello")),
            ("aGVsbG6=", Some(b"helln")),
            ("aGVsbG]8=", Some(b"hello")),
            ("aGVsbG8=garbage", Some(b"hello")),
            ("aGVsbG8", None),
            ("aGVsbG8==", Some(b"hello")),
            ("aGVsb", None),
            ("aGVs=bG8=", Some(b"hello")),
            ("aG=VsbG8=", Some(b"hello")),
            ("", Some(b"")),
            ("====", Some(b"")),
            ("aGVsbG8=\u{e9}", None),
        ];
        for &(text, want) in cases {
            assert_eq!(python_base64(text).as_deref(), want, "{text:?}");
        }
    }

    /// The one-pass path gives what the general rules give, wherever it answers, and it
    /// answers for the usual numbers.
    #[test]
    fn plain_decimal_agrees_with_the_general_rules() {
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "+0",
            "7",
            "-12",
            "+12",
            "017",
            "00",
            "0.0",
            "-0.0",
            "00.5",
            "1.",
            "-1.",
            "1.5",
            "-2.25",
            "1.5e+3",
            "1.5E-3",
            "1.5e3",
            "1e+5",
            "1.e+5",
            ".5",
            "-.5",
            "1.5e+",
            "1.5e+0400",
            "1.5e-0400",
            "1._5",
            "1_0",
            "1:30",
            "1.5.5",
            "1.5e+3x",
            "2001-12-14",
            "9223372036854775807",
            "-9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "99999999999999999999",
            "9007199254740993.0",
            "9007199254740992.0",
            "0.1",
            "0.30000000000000004",
            "123456789012345678.9",
            "1234567890123456789.0",
            "4.9406564584124654e-324",
            "1.7976931348623157e+308",
            "2.5e+22",
            "2.5e+23",
            "2.5e-22",
            "-",
            "+",
            ".",
            "-.",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        // Deterministic pseudo-random numbers of every shape the fast path reads.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..20_000 {
            let mut t = String::new();
            match next(3) {
                0 => t.push('-'),
                1 => t.push('+'),
                _ => {}
            }
            for _ in 0..next(12) {
                t.push(char::from(b'0' + u8::try_from(next(10)).unwrap()));
            }
            if next(4) > 0 {
                t.push('.');
                for _ in 0..next(12) {
                    t.push(char::from(b'0' + u8::try_from(next(10)).unwrap()));
                }
            }
            if next(3) == 0 {
                t.push(if next(2) == 0 { 'e' } else { 'E' });
                match next(3) {
                    0 => t.push('-'),
                    1 => t.push('+'),
                    _ => {}
                }
                t += &next(40).to_string();
            }
            texts.push(t);
        }
        let mut answered = 0;
        for t in &texts {
            if let Some(fast) = plain_decimal(t) {
                answered += 1;
                let general = resolve_number_like(t);
                match (&fast, &general) {
                    (Resolved::Float(a), Resolved::Float(b)) => assert_eq!(a.to_bits(), b.to_bits(), "{t}"),
                    _ => assert_eq!(fast, general, "{t}"),
                }
            }
        }
        assert!(answered > texts.len() / 3, "the fast path answered only {answered} of {}", texts.len());
        for usual in ["1.5", "-0.25", "12", "1.5e+3", "0.0"] {
            assert!(plain_decimal(usual).is_some(), "{usual}");
        }
    }

    #[test]
    fn pyyaml_table() {
        use Resolved::*;
        let cases: &[(&str, Resolved)] = &[
            ("yes", Bool(true)),
            ("On", Bool(true)),
            ("OFF", Bool(false)),
            ("y", Str),
            ("n", Str),
            ("017", Int(15)),
            ("0o17", Str),
            ("0x1F", Int(31)),
            ("0b101", Int(5)),
            ("1_000", Int(1000)),
            ("1:30", Int(90)),
            ("-1:30", Int(-90)),
            ("1:30.5", Float(90.5)),
            ("1_0.5", Float(10.5)),
            ("1e5", Str),
            ("1.0e5", Str),
            ("1.0e+5", Float(100000.0)),
            (".5", Float(0.5)),
            ("-.5", Str),
            ("1.", Float(1.0)),
            ("08", Str),
            ("~", Null),
            ("", Null),
            ("null", Null),
            ("2020-01-01", Timestamp),
            ("2001-12-14t21:59:43.10-05:00", Timestamp),
            ("<<", Merge),
            ("=", Value),
        ];
        for (text, want) in cases {
            assert_eq!(&resolve_plain(text), want, "{text:?}");
        }
        assert!(matches!(resolve_plain(".nan"), Float(f) if f.is_nan()));
        assert_eq!(resolve_plain("-.inf"), Float(f64::NEG_INFINITY));
        assert!(matches!(resolve_plain("12345678901234567890"), BigInt(_)));
    }

    #[test]
    fn timestamps_as_python_isoformat() {
        let t = parse_timestamp("2001-12-14t21:59:43.10-05:00").unwrap();
        assert_eq!(t.isoformat(), "2001-12-14T21:59:43.100000-05:00");
        assert_eq!(parse_timestamp("2001-12-14 21:59:43.10").unwrap().isoformat(), "2001-12-14T21:59:43.100000");
        assert_eq!(parse_timestamp("2002-12-14").unwrap().isoformat(), "2002-12-14");
        assert_eq!(parse_timestamp("2002-1-14"), None);
    }
}
