//! The masks of ndarrays: the `null`s of inline data, and what a node's `mask` masks (an
//! array, `nan`, or a scalar compared as numpy's `masked_values` does).

use super::{ArrayRef, AsdfFile};
use crate::error::{Error, Location, Result};
use crate::ndarray::{ArrayError, Datatype, Element, NdArray};
use crate::tree::NodeRef;

impl ArrayRef<'_> {
    /// The mask of `array` (this ndarray's data, as [`ArrayRef::read_dyn`] read it), in
    /// C order: the `null`s of
    /// inline data, together with what the node's `mask` masks: an array (non-zero is
    /// masked; one element masks all or none), `nan` (NaN elements), or a scalar (a
    /// number, a boolean, a core/complex: the elements equal to it, floats within
    /// numpy's `isclose` tolerance, as the reference's `masked_values`). `None` when
    /// there is no mask (`mask: null`, or a plain list, which the reference ignores).
    ///
    /// # Errors
    /// A `mask` array that cannot be read or does not match the array's size; a scalar
    /// mask over text or records, or a mask that is text (the reference fails to
    /// convert such an array).
    pub fn mask(&self, array: &NdArray<'_>) -> Result<Option<Vec<bool>>> {
        let mask = self.file.mask_unchecked(self.node, array).map_err(|e| self.located(e));
        self.file.unchanged(mask)
    }
}

impl AsdfFile {
    /// [`ArrayRef::mask`] of the ndarray `node`, the file not checked for changes.
    pub(super) fn mask_unchecked(&self, node: NodeRef<'_>, array: &NdArray<'_>) -> Result<Option<Vec<bool>>> {
        let inline = array.inline_mask();
        let Some(mask) = node.key("mask").filter(|m| !m.is_null()) else {
            return Ok(inline.map(<[bool]>::to_vec));
        };
        let n = array.len();
        let bad = |m: String| {
            Error::new(ArrayError::Invalid(m), Location { line: Some(self.line_of(mask)), ..Location::default() })
        };
        let mut out: Vec<bool> = if mask.is_asdf_tag("core/ndarray") {
            let m = self.array_at(mask).read_dyn()?;
            let mut v = Vec::with_capacity(m.len());
            for e in m.elements() {
                v.push(e.as_f64().is_some_and(|x| x != 0.0));
            }
            match v.len() {
                // numpy's masked array resizes a one-element mask to the data's shape.
                1 => vec![v[0]; n],
                len if len == n => v,
                len => return Err(bad(format!("mask has {len} elements, the array {n}"))),
            }
        } else if let Some(value) = mask_value(mask) {
            let Datatype::Scalar(t) = array.datatype else {
                return Err(bad(format!("a scalar mask cannot be compared with elements of {}", array.datatype)));
            };
            let mut v = Vec::with_capacity(n);
            let float = t.name().starts_with("float");
            let exact = matches!(value, MaskValue::Int(_)) && t.name().contains("int");
            if exact || t.name().starts_with("complex") {
                let data = array.data();
                for at in array.byte_offsets() {
                    let e = crate::ndarray::datatype::decode_element(&array.datatype, &data[at..], array.byteorder);
                    v.push(value.masks(&e, float));
                }
            } else {
                // Reals as floats, in one pass over the data.
                array
                    .for_each_f64(|x| v.push(value.masks(&Element::Float(x), float)))
                    .map_err(|e| bad(e.to_string()))?;
            }
            v
        } else if mask.items().is_some()
            || mask.pairs().is_some()
            || matches!(mask.value(), crate::tree::Value::Timestamp(_))
        {
            // The reference applies only arrays and numpy scalars (a datetime is not one).
            return Ok(inline.map(<[bool]>::to_vec));
        } else {
            return Err(bad(format!("mask {} is neither an ndarray nor a number", mask.key_text())));
        };
        // Inline nulls stay masked.
        if let Some(inline) = inline {
            for (o, &i) in out.iter_mut().zip(inline) {
                *o |= i;
            }
        }
        Ok(Some(out))
    }
}

/// A scalar `mask`: an integer (compared exactly with integer elements), or any other
/// number, a boolean (1 or 0) or a core/complex, as a complex number.
#[derive(Debug, Clone, Copy)]
enum MaskValue {
    Int(i128),
    Number(f64, f64),
}

impl MaskValue {
    /// Whether the mask masks element `e` (of a float array when `float`), as numpy's
    /// `masked_values` decides: `isclose` for float arrays, `==` for others; a NaN value
    /// masks the NaN elements.
    fn masks(self, e: &Element, float: bool) -> bool {
        #[allow(clippy::cast_precision_loss)]
        let (x, y) = match *e {
            Element::Int(i) => {
                if let MaskValue::Int(v) = self {
                    return i128::from(i) == v;
                }
                (i as f64, 0.0)
            }
            Element::UInt(u) => {
                if let MaskValue::Int(v) = self {
                    return i128::from(u) == v;
                }
                (u as f64, 0.0)
            }
            Element::Bool(b) => (f64::from(u8::from(b)), 0.0),
            Element::Float(f) => (f, 0.0),
            Element::Complex(re, im) => (re, im),
            _ => return false,
        };
        #[allow(clippy::cast_precision_loss)]
        let (re, im) = match self {
            MaskValue::Int(v) => (v as f64, 0.0),
            MaskValue::Number(re, im) => (re, im),
        };
        if re.is_nan() || im.is_nan() {
            x.is_nan() || y.is_nan()
        } else if float {
            (x == re && y == im)
                || (re.is_finite() && im.is_finite() && (x - re).hypot(y - im) <= 1e-8 + 1e-5 * re.hypot(im))
        } else {
            x == re && y == im
        }
    }
}

/// A scalar `mask`'s value; `None` when it is not a number, a boolean or a core/complex.
fn mask_value(mask: NodeRef<'_>) -> Option<MaskValue> {
    use crate::tree::Value;
    if mask.is_asdf_tag("core/complex") {
        return mask.as_str().and_then(crate::ndarray::parse_complex).map(|(re, im)| MaskValue::Number(re, im));
    }
    match mask.value() {
        Value::Bool(b) => Some(MaskValue::Int(i128::from(*b))),
        Value::Int(i) => Some(MaskValue::Int(i128::from(*i))),
        Value::BigInt(b) => i128::try_from(&**b).ok().map(MaskValue::Int),
        Value::Float(f) => Some(MaskValue::Number(*f, 0.0)),
        _ => None,
    }
}
