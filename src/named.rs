//! Enums whose values are stored, sent or routed as text: a platform's name
//! in a key, an outbox state in a table, an object's route in a URL path.
//! [`named!`](crate::named) declares such an enum with each value's one
//! spelling beside it, and gives it the same things: `ALL`, `as_str`,
//! `parse` (the exact spelling, nothing else), `read` (what a person typed:
//! any case, spaces around) and `Display`.

/// An enum whose values each have one text name.
pub trait Named: Copy + Eq + std::fmt::Debug + 'static {
    /// Every value, in declaration order.
    fn all() -> &'static [Self];
    /// The value's one spelling.
    fn as_str(self) -> &'static str;
    /// The value spelt exactly `text`.
    fn parse(text: &str) -> Option<Self> {
        Self::all().iter().copied().find(|value| value.as_str() == text)
    }
    /// The value a person typed: its spelling in any case, spaces around it
    /// ignored.
    fn read(text: &str) -> Option<Self> {
        Self::all().iter().copied().find(|value| value.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

/// Declares an enum with a text name per value:
///
/// ```ignore
/// crate::named! {
///     /// A messenger.
///     pub enum Platform { Telegram = "telegram", Web = "web" }
/// }
/// ```
///
/// The enum derives `Debug, Clone, Copy, PartialEq, Eq` (give more derives
/// as attributes) and gets `ALL`, `as_str`, `parse`, `read` and `Display`.
#[macro_export]
macro_rules! named {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident = $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$variant_meta])* $variant),+
        }

        // Not every enum uses every method the macro gives it.
        #[allow(dead_code)]
        impl $name {
            /// Every value, in declaration order.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            /// The value's one spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value spelt exactly `text`.
            pub fn parse(text: &str) -> Option<$name> {
                <$name as $crate::named::Named>::parse(text)
            }

            /// The value a person typed: its spelling in any case, spaces
            /// around it ignored.
            pub fn read(text: &str) -> Option<$name> {
                <$name as $crate::named::Named>::read(text)
            }
        }

        impl $crate::named::Named for $name {
            fn all() -> &'static [$name] {
                &$name::ALL
            }

            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str(self.as_str())
            }
        }
    };
}

/// For tests: every value of `T` is read back from its own spelling, the
/// spellings differ, and none of `strangers` is read as anything.
#[cfg(test)]
pub fn assert_spellings<T: Named>(strangers: &[&str]) {
    let mut seen = std::collections::BTreeSet::new();
    for &value in T::all() {
        assert!(seen.insert(value.as_str()), "{value:?} shares its spelling");
        assert_eq!(T::parse(value.as_str()), Some(value));
    }
    for stranger in strangers {
        assert_eq!(T::parse(stranger), None, "{stranger:?}");
    }
}

#[cfg(test)]
mod tests {
    crate::named! {
        enum Colour { Red = "red", Green = "green" }
    }

    #[test]
    fn a_named_enum_spells_each_value_once_and_reads_back_only_those() {
        assert_eq!(Colour::ALL, [Colour::Red, Colour::Green]);
        assert_eq!(Colour::Green.to_string(), "green");
        assert_eq!((Colour::parse(" Green"), Colour::read(" Green ")), (None, Some(Colour::Green)));
        assert_eq!(Colour::read("gre en"), None);
        super::assert_spellings::<Colour>(&["", "Red", "red ", "blue"]);
    }

    #[test]
    #[should_panic(expected = "shares its spelling")]
    fn two_values_spelt_alike_are_caught() {
        crate::named! {
            enum Twins { One = "same", Two = "same" }
        }
        super::assert_spellings::<Twins>(&[]);
    }
}
