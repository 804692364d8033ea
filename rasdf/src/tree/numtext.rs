//! Python-style number text, in one place: the float text PyYAML writes (the emitter's),
//! and Python's `repr()` of floats and `str()` of complex numbers (what the reference
//! library shows, and writes for `core/complex`).

use std::fmt::Write;

/// A float as PyYAML writes it: Python's shortest `repr`, with `.0` before a bare
/// exponent, and `.nan`, `.inf`, `-.inf`.
pub fn format_float(x: f64) -> String {
    let mut out = String::with_capacity(24);
    push_float(&mut out, x);
    out
}

/// [`format_float`] appended to `out`, without allocating on its own.
pub fn push_float(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str(".nan");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { ".inf" } else { "-.inf" });
        return;
    }
    // The shortest digits that read back to `x`, as Python's repr gives them; only the
    // layout differs.
    let mut digits = [0u8; 17];
    let (n_digits, exp) = shortest_digits(x.abs(), &mut digits);
    let digits = std::str::from_utf8(&digits[..n_digits]).unwrap_or("0");
    let (lead, frac) = digits.split_at(1);
    if x.is_sign_negative() {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let e = usize::try_from(exp).unwrap_or(0);
            if n_digits > e + 1 {
                out.push_str(lead);
                out.push_str(&frac[..e]);
                out.push('.');
                out.push_str(&frac[e..]);
            } else {
                out.push_str(lead);
                out.push_str(frac);
                (0..e + 1 - n_digits).for_each(|_| out.push('0'));
                out.push_str(".0");
            }
        } else {
            out.push_str("0.");
            (0..usize::try_from(-exp - 1).unwrap_or(0)).for_each(|_| out.push('0'));
            out.push_str(lead);
            out.push_str(frac);
        }
    } else {
        out.push_str(lead);
        out.push('.');
        out.push_str(if frac.is_empty() { "0" } else { frac });
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs());
    }
}

/// The shortest decimal digits of finite `x >= 0` that read back to it, written to `out`
/// without trailing zeros, and the power of ten of the first one: `(digits, exp)` stands
/// for `d.ddd × 10^exp`; zero is `"0"` at power 0. zmij picks the digits as Python's repr
/// does, a tie between two last digits going to the even one (std's `{:e}` rounds it
/// up). Its fixed form (below 1e16) and its exponent form both hold at most 17 digits
/// from the first significant one, so `out` holds them all.
fn shortest_digits(x: f64, out: &mut [u8; 17]) -> (usize, i32) {
    let mut buffer = zmij::Buffer::new();
    let text = buffer.format_finite(x).as_bytes();
    // zmij writes `ddd.ddd` (leading or trailing zeros included) or `d[.ddd]e±N`.
    let (mantissa, mut exp) = match text.iter().position(|&b| b == b'e') {
        Some(e) => (&text[..e], std::str::from_utf8(&text[e + 1..]).ok().and_then(|t| t.parse().ok()).unwrap_or(0)),
        None => (text, 0i32),
    };
    let before_point = mantissa.iter().position(|&b| b == b'.').unwrap_or(mantissa.len());
    exp += i32::try_from(before_point).unwrap_or(0) - 1;
    let mut n = 0;
    for &b in mantissa.iter().filter(|b| b.is_ascii_digit()) {
        if n == 0 && b == b'0' {
            // A leading zero: the first significant digit is one place further down.
            exp -= 1;
        } else if n < out.len() {
            out[n] = b;
            n += 1;
        }
    }
    while n > 1 && out[n - 1] == b'0' {
        n -= 1;
    }
    if n == 0 {
        out[0] = b'0';
        return (1, 0);
    }
    (n, exp)
}

/// Python's `repr()` of a float: `1.0`, `1e+16`, `1.5e-07`, `inf`, `nan`.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // `format_float` is PyYAML's form of the repr: a `.0` added before an exponent.
    let s = format_float(x);
    match s.find(".0e") {
        Some(i) => format!("{}{}", &s[..i], &s[i + 2..]),
        None => s,
    }
}

/// Python's `repr` of a float inside a complex: no `.0` added (`1`, `1.5`, `1e+20`).
fn complex_part(x: f64) -> String {
    let s = float_repr(x);
    s.strip_suffix(".0").map_or_else(|| s.clone(), str::to_string)
}

/// Python's `str(complex)`: `(1+2j)`, `2j`, `(-0+0j)`, `(nan+infj)`.
pub fn complex_repr(re: f64, im: f64) -> String {
    let imag = complex_part(im);
    // Python shows no sign on a NaN: `(1+nanj)` whatever its sign bit.
    let imag_signed = if im.is_sign_negative() && !im.is_nan() && !imag.starts_with('-') {
        format!("-{imag}")
    } else if imag.starts_with('-') {
        imag
    } else {
        format!("+{imag}")
    };
    if re == 0.0 && re.is_sign_positive() {
        return format!("{}j", complex_part(im));
    }
    format!("({}{imag_signed}j)", complex_part(re))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_pyyaml() {
        for (x, s) in [
            (0.1, "0.1"),
            (3.0, "3.0"),
            (1e20, "1.0e+20"),
            (1e-7, "1.0e-07"),
            (1.5e-5, "1.5e-05"),
            (-0.0, "-0.0"),
            (1e16, "1.0e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (123456.789, "123456.789"),
            (f64::from(0.1f32), "0.10000000149011612"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(format_float(x), s, "{x}");
        }
    }

    /// 4 000 floats as the pinned PyYAML writes them (tests/python/make_float_reprs.py):
    /// random bits, decimals of every size, subnormals, and 17-digit ties, which Python
    /// rounds half to even (std's `{:e}` gave `1658206780088562.3` for the exact
    /// `...562.25`, Python `...562.2`).
    #[test]
    fn floats_as_pyyaml_writes_them() {
        let table = include_str!("../../../testdata/scalars/floats.txt");
        let mut n = 0;
        for line in table.lines() {
            let (bits, text) = line.split_once(' ').unwrap();
            let x = f64::from_bits(u64::from_str_radix(bits, 16).unwrap());
            assert_eq!(format_float(x), text, "{bits}");
            n += 1;
        }
        assert_eq!(n, 4000);
    }

    #[test]
    fn complex_as_python_str() {
        assert_eq!(complex_repr(1.0, 2.0), "(1+2j)");
        assert_eq!(complex_repr(0.0, 2.0), "2j");
        assert_eq!(complex_repr(0.0, 0.0), "0j");
        assert_eq!(complex_repr(-0.0, 0.0), "(-0+0j)");
        assert_eq!(complex_repr(f64::NAN, f64::INFINITY), "(nan+infj)");
        assert_eq!(complex_repr(f64::NAN, f64::NEG_INFINITY), "(nan-infj)");
        assert_eq!(complex_repr(1.0, -f64::NAN), "(1+nanj)");
        assert_eq!(complex_repr(-f64::NAN, 1.0), "(nan+1j)");
        assert_eq!(complex_repr(0.0, -f64::NAN), "nanj");
        assert_eq!(complex_repr(0.0, -f64::MAX), "-1.7976931348623157e+308j");
        assert_eq!(complex_repr(1.5, -1e-20), "(1.5-1e-20j)");
    }
}
