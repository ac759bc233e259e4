//! The HTTP methods routes use: the Worker's ([`crate::routes`]) and the
//! Durable Objects' (`channel::routes`, the Gateway object's).

use crate::named::Named;

/// The methods routes use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    Post,
    Put,
    Delete,
}

/// A Durable Object's route: named by its path ([`Named::as_str`]), served
/// with one method. The Worker that calls the object and the object that
/// serves it both spell it through this.
pub trait ObjectRoute: Named {
    /// The host of the URL a stub is called with: the object's kind, for
    /// logs (the runtime never looks at it).
    const HOST: &'static str;

    /// The method the route is served with.
    fn verb(self) -> Verb;

    /// The URL a stub is called with.
    fn url(self) -> String {
        format!("https://{}{}", Self::HOST, self.as_str())
    }

    /// The route at `path`, whatever the method (the object answers the
    /// wrong method with an error of its own).
    fn at(path: &str) -> Option<Self> {
        Self::parse(path)
    }
}

/// For tests: each route of `R` is found at its own path and none at `strangers`.
#[cfg(test)]
pub fn assert_routes<R: ObjectRoute>(strangers: &[&str]) {
    crate::named::assert_spellings::<R>(strangers);
    for &route in R::all() {
        assert_eq!(R::at(route.as_str()), Some(route));
        assert!(route.as_str().starts_with('/'), "{route:?}");
        assert_eq!(route.url(), format!("https://{}{}", R::HOST, route.as_str()));
    }
}
