//! The Gateway object's routes: the one spelling of each, shared by the
//! Worker that calls the object (the admin API, the cron) and the object
//! that serves it.

pub use crate::verb::{ObjectRoute, Verb};

crate::named! {
    /// A request the Gateway object serves; each answers with the session's
    /// status. `Start`: the admin started the Gateway (connect, a fresh
    /// session). `Ensure`: the cron's check (connect if the Gateway is meant
    /// to run and is not). `Stop`: the admin stopped it (close the socket,
    /// stay closed). `Status`: the session as it is. A shard's `Start` and
    /// `Ensure` carry `?shard=i&of=K&mc=M`.
    ///
    /// The gate object's: `Plan` (the admin's start: plan K shards, reshard
    /// if K changed, start each), `Check` (the cron's: the same, ensuring
    /// rather than restarting), `Halt` (stop every shard), `Shards` (every
    /// shard's status), `Grant` (a shard asks to IDENTIFY: `{wait_ms}`),
    /// `Ready` (a shard is READY or RESUMED: hands over a resharding).
    pub enum GatewayRoute {
        Start = "/start",
        Ensure = "/ensure",
        Stop = "/stop",
        Status = "/status",
        Plan = "/plan",
        Check = "/check",
        Halt = "/halt",
        Shards = "/shards",
        Grant = "/grant",
        Ready = "/ready",
    }
}

impl ObjectRoute for GatewayRoute {
    const HOST: &'static str = "gateway";

    fn verb(self) -> Verb {
        match self {
            GatewayRoute::Start
            | GatewayRoute::Ensure
            | GatewayRoute::Plan
            | GatewayRoute::Check
            | GatewayRoute::Grant
            | GatewayRoute::Ready => Verb::Post,
            GatewayRoute::Stop | GatewayRoute::Halt => Verb::Delete,
            GatewayRoute::Status | GatewayRoute::Shards => Verb::Get,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_found_at_its_own_path_and_nothing_else_is() {
        crate::verb::assert_routes::<GatewayRoute>(&[
            "",
            "/",
            "/start/",
            "/START",
            "status",
            "/ensure?now=1",
            "/inbound",
        ]);
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
                (GatewayRoute::Plan, Verb::Post),
                (GatewayRoute::Check, Verb::Post),
                (GatewayRoute::Halt, Verb::Delete),
                (GatewayRoute::Shards, Verb::Get),
                (GatewayRoute::Grant, Verb::Post),
                (GatewayRoute::Ready, Verb::Post),
            ]
        );
    }
}
