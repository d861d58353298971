//! The queue: a subscription's servers in the order Auto prefers them.

use std::collections::BTreeMap;

use crate::history::History;
use crate::score::Standing;
use crate::server::{Server, ServerId};
use crate::time::Timestamp;

/// One place in the queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Place {
    /// The server.
    pub id: ServerId,
    /// Its standing.
    pub standing: Standing,
    /// Its position in the subscription (ties keep this order).
    pub position: usize,
}

/// Ranks `servers` (in subscription order) by standing; ties keep subscription order.
/// Servers without a history or speed entry are unchecked.
pub fn rank(
    servers: &[Server],
    histories: &BTreeMap<ServerId, History>,
    speeds: &BTreeMap<ServerId, f64>,
    now: Timestamp,
) -> Vec<Place> {
    let empty = History::new();
    let mut places: Vec<Place> = servers
        .iter()
        .enumerate()
        .map(|(position, s)| Place {
            standing: Standing::of(
                histories.get(&s.id).unwrap_or(&empty),
                speeds.get(&s.id).copied(),
                now,
            ),
            id: s.id.clone(),
            position,
        })
        .collect();
    places.sort_by(|a, b| {
        a.standing
            .queue_cmp(&b.standing)
            .then(a.position.cmp(&b.position))
    });
    places
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::{Measurement, Method};

    fn h(ms: &[Option<u32>]) -> History {
        History::from_measurements(ms.iter().map(|&ms| Measurement {
            at: Timestamp::ZERO,
            method: Method::Url,
            ms,
        }))
    }

    #[test]
    fn worked_example_queue_is_finland_germany_netherlands() {
        let servers: Vec<Server> = ["nl", "de", "fi"]
            .iter()
            .map(|s| Server::named(s))
            .collect();
        let histories = BTreeMap::from([
            (ServerId::new("fi"), h(&[Some(60), Some(61), Some(62)])),
            (ServerId::new("de"), h(&[Some(20), Some(25), Some(300)])),
            (ServerId::new("nl"), h(&[Some(15), Some(18), None])),
        ]);
        let q = rank(&servers, &histories, &BTreeMap::new(), Timestamp::ZERO);
        let ids: Vec<&str> = q.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["fi", "de", "nl"]);
    }

    #[test]
    fn unscored_groups_follow_scored_and_ties_keep_subscription_order() {
        let names = [
            "silent", "new1", "fast", "slow", "scored_b", "new2", "scored_a",
        ];
        let servers: Vec<Server> = names.iter().map(|s| Server::named(s)).collect();
        let histories = BTreeMap::from([
            (ServerId::new("silent"), h(&[Some(10), None])),
            (ServerId::new("scored_a"), h(&[Some(300)])),
            (ServerId::new("scored_b"), h(&[Some(300)])),
        ]);
        let speeds = BTreeMap::from([(ServerId::new("fast"), 90.0), (ServerId::new("slow"), 20.0)]);
        let q = rank(&servers, &histories, &speeds, Timestamp::ZERO);
        let ids: Vec<&str> = q.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "scored_b", "scored_a", "fast", "slow", "new1", "new2", "silent"
            ]
        );
    }
}
