//! The Gateway object's routes: the one spelling of each, shared by the
//! Worker that calls the object (the admin API, the cron) and the object
//! that serves it.

pub use crate::verb::Verb;

/// A request the Gateway object serves; each answers with the session's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayRoute {
    /// The admin started the Gateway: connect (a fresh session).
    Start,
    /// The cron's check: connect if the Gateway is meant to run and is not.
    Ensure,
    /// The admin stopped the Gateway: close the socket, stay closed.
    Stop,
    /// The session as it is.
    Status,
}

impl GatewayRoute {
    pub const ALL: [GatewayRoute; 4] =
        [GatewayRoute::Start, GatewayRoute::Ensure, GatewayRoute::Stop, GatewayRoute::Status];

    pub fn path(self) -> &'static str {
        match self {
            GatewayRoute::Start => "/start",
            GatewayRoute::Ensure => "/ensure",
            GatewayRoute::Stop => "/stop",
            GatewayRoute::Status => "/status",
        }
    }

    pub fn verb(self) -> Verb {
        match self {
            GatewayRoute::Start | GatewayRoute::Ensure => Verb::Post,
            GatewayRoute::Stop => Verb::Delete,
            GatewayRoute::Status => Verb::Get,
        }
    }

    /// The URL a stub is called with (the host is never looked at).
    pub fn url(self) -> String {
        format!("https://gateway{}", self.path())
    }

    /// The route at `path`, whatever the method (the object answers 404 to
    /// an unknown path and to the wrong method alike).
    pub fn at(path: &str) -> Option<GatewayRoute> {
        GatewayRoute::ALL.into_iter().find(|route| route.path() == path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_found_at_its_own_path_and_nothing_else_is() {
        for route in GatewayRoute::ALL {
            assert_eq!(GatewayRoute::at(route.path()), Some(route));
            assert!(route.url().ends_with(route.path()));
        }
        for stranger in ["", "/", "/start/", "/START", "status", "/ensure?now=1", "/inbound"] {
            assert_eq!(GatewayRoute::at(stranger), None, "{stranger}");
        }
    }

    #[test]
    fn the_admin_starts_and_stops_and_only_reads_with_get() {
        let verbs: Vec<(GatewayRoute, Verb)> =
            GatewayRoute::ALL.into_iter().map(|route| (route, route.verb())).collect();
        assert_eq!(
            verbs,
            [
                (GatewayRoute::Start, Verb::Post),
                (GatewayRoute::Ensure, Verb::Post),
                (GatewayRoute::Stop, Verb::Delete),
                (GatewayRoute::Status, Verb::Get),
            ]
        );
    }
}
