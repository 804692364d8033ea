//! Builder-style setters for the options structs, which are `#[non_exhaustive]`: code
//! outside the crate starts from `Default` (or another constructor) and sets fields
//! with these, never with a struct literal, so that new fields are not breaking.

/// `impl $ty { pub fn field(self, value) -> Self ... }` for each `field: Type` given.
macro_rules! setters {
    ($ty:ident { $($field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("These options with `", stringify!($field), "` set to `", stringify!($field), "` (see the field).")]
                #[must_use]
                pub fn $field(mut self, $field: $t) -> Self {
                    self.$field = $field;
                    self
                }
            )*
        }
    };
}

pub(crate) use setters;
