//! A secret setting's value (a token, an API key, a signing secret). It never
//! shows itself by accident: `Debug` prints no part of it, and there is no
//! `Display` or `Serialize`, so the value leaves only through [`Secret::expose`],
//! where a reader can see it go.

use std::fmt;

#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the one place that sends or compares it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_set(&self) -> bool {
        !self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Secret")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_prints_no_part_of_the_value() {
        let secret = Secret::new("xoxb-very-secret-value");
        let shown = format!("{secret:?} {secret:#?} {:?}", Some(&secret));
        assert!(!shown.contains("xoxb") && !shown.contains("value"), "{shown}");
        assert_eq!(secret.expose(), "xoxb-very-secret-value");
        assert!(secret.is_set() && !Secret::default().is_set());
    }
}
