//! Models of peers' selection policies, for comparison in the simulator.
//!
//! Each model is a pure state machine behind [`Policy`](switchyard_auto::Policy), written from the
//! peer's source with its default settings; each module's documentation names the files
//! it follows and where every default comes from:
//!
//! - [`UrlTest`]: sing-box's `urltest` outbound group (`name() == "urltest"`);
//! - [`Fallback`]: mihomo's `fallback` proxy group (`name() == "fallback"`).
//!
//! Both models read the same events as Auto: the group is the subscription named by
//! [`Event::AutoOn`], "in use" means the `sent` traffic counter grew, and
//! [`Event::ConnectFailed`] is a failed dial through the group. Inputs are validated as
//! the engine validates them, and a refused event changes nothing. Marks, speed tests,
//! outside measurements and network events are accepted and ignored, as the peers have
//! nothing like them.
//!
//! An update of the group's subscription is modelled as what a subscription update is
//! for these clients: a reload of the configuration, which restarts the group with fresh
//! state (see each module).

mod fallback;
mod urltest;

pub use fallback::{Fallback, FallbackConfig};
pub use urltest::{UrlTest, UrlTestConfig};

use std::collections::HashSet;

use switchyard_auto::error::{InputError, counters_forward};
use switchyard_auto::event::{Check, Event};
use switchyard_auto::measurement::ProbeReply;
use switchyard_auto::server::{ServerId, Subscription};
use switchyard_auto::time::Timestamp;

/// What an accepted event means for a model's group.
#[derive(Debug)]
enum Step {
    /// Nothing for the group to do.
    Ignored,
    /// Auto was turned on in this subscription: start the group on it.
    Start(Subscription),
    /// The group's subscription changed: the peer reloads and restarts the group.
    Reload(Subscription),
    /// The group's subscription is gone: the group stops.
    Stop,
    /// The user sent data: the group is in use.
    InUse,
    /// A dial through the group failed on this server.
    DialFailed(ServerId),
}

/// The inputs both models track and validate like the engine does: the subscriptions,
/// which one the group follows, and the traffic counters.
#[derive(Debug, Default)]
struct Inputs {
    subs: Vec<Subscription>,
    auto: Option<String>,
    sent: u64,
    received: u64,
}

impl Inputs {
    /// Validate `event`, record what the models share, and say what it means for the
    /// group. On error nothing was recorded.
    fn accept(&mut self, event: Event) -> Result<Step, InputError> {
        match event {
            Event::Subscriptions(list) => {
                validate_subscriptions(&list)?;
                let step = match &self.auto {
                    None => Step::Ignored,
                    Some(name) => match list.iter().find(|s| &s.name == name) {
                        None => Step::Stop,
                        Some(sub) if Some(sub) != self.find(name) => Step::Reload(sub.clone()),
                        Some(_) => Step::Ignored,
                    },
                };
                if matches!(step, Step::Stop) {
                    self.auto = None;
                }
                self.subs = list;
                Ok(step)
            }
            Event::SubscriptionUpdated(sub) => {
                let Some(index) = self.subs.iter().position(|s| s.name == sub.name) else {
                    return Err(InputError::UnknownSubscription { name: sub.name });
                };
                validate_subscriptions(core::slice::from_ref(&sub))?;
                let changed = self.subs[index] != sub;
                let ours = self.auto.as_deref() == Some(sub.name.as_str());
                self.subs[index] = sub.clone();
                Ok(if changed && ours {
                    Step::Reload(sub)
                } else {
                    Step::Ignored
                })
            }
            Event::AutoOn { subscription } => {
                let Some(sub) = self.find(&subscription).cloned() else {
                    return Err(InputError::UnknownSubscription { name: subscription });
                };
                self.auto = Some(subscription);
                Ok(Step::Start(sub))
            }
            Event::Traffic { sent, received } => {
                counters_forward((self.sent, self.received), (sent, received))?;
                let grew = sent > self.sent;
                self.sent = sent;
                self.received = received;
                Ok(if grew { Step::InUse } else { Step::Ignored })
            }
            Event::ConnectFailed { server } => {
                self.known(&server)?;
                Ok(Step::DialFailed(server))
            }
            // Each model validates replies against its own checks before calling this.
            Event::ProbeResults { .. } => Ok(Step::Ignored),
            Event::Mark(servers) | Event::Unmark(servers) => {
                servers.iter().try_for_each(|s| self.known(s))?;
                Ok(Step::Ignored)
            }
            Event::SpeedTest { server, mbps } => {
                self.known(&server)?;
                if !mbps.is_finite() || mbps < 0.0 {
                    return Err(InputError::InvalidSpeed { server, mbps });
                }
                Ok(Step::Ignored)
            }
            Event::Measured { server, .. } => {
                self.known(&server)?;
                Ok(Step::Ignored)
            }
            Event::NetworkAvailable(_) | Event::NetworkChanged | Event::MarksDone => {
                Ok(Step::Ignored)
            }
        }
    }

    fn find(&self, name: &str) -> Option<&Subscription> {
        self.subs.iter().find(|s| s.name == name)
    }

    fn known(&self, server: &ServerId) -> Result<(), InputError> {
        if self.subs.iter().any(|s| s.contains(server)) {
            Ok(())
        } else {
            Err(InputError::UnknownServer {
                server: server.clone(),
            })
        }
    }
}

/// Refuses repeated subscription names and servers repeated in one subscription, with
/// sets (a pairwise scan was quadratic in a large subscription).
fn validate_subscriptions(list: &[Subscription]) -> Result<(), InputError> {
    let mut names = HashSet::with_capacity(list.len());
    for sub in list {
        if !names.insert(sub.name.as_str()) {
            return Err(InputError::DuplicateSubscription {
                name: sub.name.clone(),
            });
        }
        let mut ids = HashSet::with_capacity(sub.servers.len());
        for server in &sub.servers {
            if !ids.insert(&server.id) {
                return Err(InputError::DuplicateServer {
                    subscription: sub.name.clone(),
                    server: server.id.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Refuse replies naming a server the check did not probe.
fn validate_replies(check: &Check, replies: &[(ServerId, ProbeReply)]) -> Result<(), InputError> {
    match replies.iter().find(|(s, _)| !check.servers.contains(s)) {
        Some((server, _)) => Err(InputError::UnexpectedReply {
            check: check.id,
            server: server.clone(),
        }),
        None => Ok(()),
    }
}

/// Each probed server's delay in probe order, `None` when it failed. Both peers take any
/// HTTP status as an answer; a server without a reply, or whose reply came after the
/// check's timeout, failed.
fn delays(check: &Check, replies: &[(ServerId, ProbeReply)]) -> Vec<(ServerId, Option<u32>)> {
    let limit = u32::try_from(check.timeout.as_millis()).unwrap_or(u32::MAX);
    check
        .servers
        .iter()
        .map(|server| {
            let delay = replies
                .iter()
                .rev()
                .find(|(s, _)| s == server)
                .and_then(|(_, reply)| match *reply {
                    ProbeReply::Answered { total_ms, .. } if total_ms <= limit => Some(total_ms),
                    _ => None,
                });
            (server.clone(), delay)
        })
        .collect()
}

/// Split delays into the answered and silent lists of a check report.
/// Whether `now` is strictly more than `span` after `earlier` (Go's
/// `time.Since(t) > span`).
fn elapsed_more_than(now: Timestamp, earlier: Timestamp, span: core::time::Duration) -> bool {
    now.since(earlier) > span
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    use switchyard_auto::event::{CheckId, Trigger};
    use switchyard_auto::measurement::Method;

    fn subs() -> Vec<Subscription> {
        vec![
            Subscription::of_names("Main", &["a", "b"]),
            Subscription::of_names("Backup", &["c"]),
        ]
    }

    #[test]
    fn refused_inputs_change_nothing() {
        let mut inputs = Inputs::default();
        inputs.accept(Event::Subscriptions(subs())).unwrap();
        let dup = vec![
            Subscription::of_names("Main", &["a"]),
            Subscription::of_names("Main", &["b"]),
        ];
        assert_eq!(
            inputs.accept(Event::Subscriptions(dup)).unwrap_err(),
            InputError::DuplicateSubscription {
                name: "Main".into()
            }
        );
        assert_eq!(inputs.subs, subs());
        assert!(matches!(
            inputs.accept(Event::AutoOn {
                subscription: "Nope".into()
            }),
            Err(InputError::UnknownSubscription { .. })
        ));
        assert_eq!(inputs.auto, None);
        inputs
            .accept(Event::Traffic {
                sent: 10,
                received: 5,
            })
            .unwrap();
        assert!(matches!(
            inputs.accept(Event::Traffic {
                sent: 9,
                received: 6
            }),
            Err(InputError::CountersWentBack { field: "sent", .. })
        ));
        assert_eq!((inputs.sent, inputs.received), (10, 5));
        assert!(matches!(
            inputs.accept(Event::ConnectFailed {
                server: "zz".into()
            }),
            Err(InputError::UnknownServer { .. })
        ));
        assert!(matches!(
            inputs.accept(Event::SubscriptionUpdated(Subscription::of_names(
                "Main",
                &["a", "a"]
            ))),
            Err(InputError::DuplicateServer { .. })
        ));
        assert_eq!(inputs.subs, subs());
    }

    #[test]
    fn updates_of_the_group_reload_it_and_others_do_not() {
        let mut inputs = Inputs::default();
        inputs.accept(Event::Subscriptions(subs())).unwrap();
        let on = Event::AutoOn {
            subscription: "Main".into(),
        };
        assert!(matches!(inputs.accept(on).unwrap(), Step::Start(_)));
        let backup = Subscription::of_names("Backup", &["d"]);
        assert!(matches!(
            inputs.accept(Event::SubscriptionUpdated(backup)).unwrap(),
            Step::Ignored
        ));
        let same = Subscription::of_names("Main", &["a", "b"]);
        assert!(matches!(
            inputs.accept(Event::SubscriptionUpdated(same)).unwrap(),
            Step::Ignored
        ));
        let main = Subscription::of_names("Main", &["b", "e"]);
        assert!(matches!(
            inputs.accept(Event::SubscriptionUpdated(main)).unwrap(),
            Step::Reload(_)
        ));
        let without = vec![Subscription::of_names("Backup", &["d"])];
        assert!(matches!(
            inputs.accept(Event::Subscriptions(without)).unwrap(),
            Step::Stop
        ));
        assert_eq!(inputs.auto, None);
    }

    #[test]
    fn late_and_missing_replies_count_as_failures() {
        let check = Check {
            id: CheckId(1),
            trigger: Trigger::Scheduled,
            servers: vec!["a".into(), "b".into(), "c".into()],
            method: Method::Url,
            timeout: Duration::from_secs(5),
        };
        let replies = vec![
            ("a".into(), ProbeReply::after(80)),
            ("b".into(), ProbeReply::after(5001)),
        ];
        assert_eq!(validate_replies(&check, &replies), Ok(()));
        let d = delays(&check, &replies);
        assert_eq!(
            d,
            [
                ("a".into(), Some(80)),
                ("b".into(), None),
                ("c".into(), None)
            ]
        );
        let stray = vec![("x".into(), ProbeReply::NoAnswer)];
        assert_eq!(
            validate_replies(&check, &stray),
            Err(InputError::UnexpectedReply {
                check: CheckId(1),
                server: "x".into()
            })
        );
    }
}
