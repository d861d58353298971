//! Events as JSON: one object per [`Event`], tagged by `type`.
//!
//! ```json
//! {"type": "subscriptions", "subscriptions": [
//!     {"name": "main", "servers": [{"id": "vless:1f0c", "name": "Helsinki"}]}]}
//! {"type": "subscription_updated", "subscription": {"name": "main", "servers": []}}
//! {"type": "auto_on", "subscription": "main"}
//! {"type": "traffic", "sent": 18000, "received": 240000}
//! {"type": "connect_failed", "server": "vless:1f0c"}
//! {"type": "probe_results", "check": 3, "replies": [
//!     {"server": "vless:1f0c", "total_ms": null},
//!     {"server": "vless:77aa", "total_ms": 180, "request_ms": 60, "status": 204}]}
//! {"type": "network_available", "available": false}
//! {"type": "network_changed"}
//! {"type": "mark", "servers": ["vless:1f0c"]}
//! {"type": "unmark", "servers": ["vless:1f0c"]}
//! {"type": "marks_done"}
//! {"type": "speed_test", "server": "vless:1f0c", "mbps": 93.5}
//! {"type": "measured", "server": "vless:1f0c",
//!     "measurement": {"at": 1767225600000, "method": "url", "ms": 140}}
//! ```
//!
//! A server's `name` may be left out (it is then its `id`); a probe reply's `total_ms`
//! and a measurement's `ms` must be there, `null` meaning "no answer", so that a field
//! left out by mistake is not read as a silent server. Every other field is required
//! and unknown fields are refused; errors name the field (`event.replies[1].total_ms`).

use serde_json::Value;
use switchyard_auto::{
    CheckId, Event, Measurement, Method, ProbeReply, Server, ServerId, Subscription, Timestamp,
};

use crate::fields::{self, JsonError, Object};

/// The event types, as the `type` field names them.
pub const EVENT_TYPES: [&str; 13] = [
    "subscriptions",
    "subscription_updated",
    "auto_on",
    "traffic",
    "connect_failed",
    "probe_results",
    "network_available",
    "network_changed",
    "mark",
    "unmark",
    "marks_done",
    "speed_test",
    "measured",
];

/// Reads one event from its JSON text.
///
/// ```
/// use switchyard_auto::Event;
/// use switchyard_auto_ffi::parse_event;
///
/// let ev = parse_event(r#"{"type":"traffic","sent":10,"received":0}"#).unwrap();
/// assert_eq!(ev, Event::Traffic { sent: 10, received: 0 });
/// let err = parse_event(r#"{"type":"traffic","sent":"10","received":0}"#).unwrap_err();
/// assert_eq!(err.field, "event.sent");
/// ```
pub fn parse_event(text: &str) -> Result<Event, JsonError> {
    let mut o = Object::new("event", fields::parse("event", text)?)?;
    let ty: String = o.req("type")?;
    let (event, expected) = match ty.as_str() {
        "subscriptions" => {
            let subs = o
                .list("subscriptions")?
                .into_iter()
                .map(|(path, v)| subscription(path, v))
                .collect::<Result<_, _>>()?;
            (Event::Subscriptions(subs), "type, subscriptions")
        }
        "subscription_updated" => {
            let v = o.take("subscription")?;
            let sub = subscription(o.path_of("subscription"), v)?;
            (Event::SubscriptionUpdated(sub), "type, subscription")
        }
        "auto_on" => (
            Event::AutoOn {
                subscription: o.req("subscription")?,
            },
            "type, subscription",
        ),
        "traffic" => (
            Event::Traffic {
                sent: o.req("sent")?,
                received: o.req("received")?,
            },
            "type, sent, received",
        ),
        "connect_failed" => (
            Event::ConnectFailed {
                server: o.req("server")?,
            },
            "type, server",
        ),
        "probe_results" => {
            let check = CheckId(o.req("check")?);
            let replies = o
                .list("replies")?
                .into_iter()
                .map(|(path, v)| reply(path, v))
                .collect::<Result<_, _>>()?;
            (
                Event::ProbeResults { check, replies },
                "type, check, replies",
            )
        }
        "network_available" => (
            Event::NetworkAvailable(o.req("available")?),
            "type, available",
        ),
        "network_changed" => (Event::NetworkChanged, "type"),
        "mark" => (Event::Mark(o.req("servers")?), "type, servers"),
        "unmark" => (Event::Unmark(o.req("servers")?), "type, servers"),
        "marks_done" => (Event::MarksDone, "type"),
        "speed_test" => (
            Event::SpeedTest {
                server: o.req("server")?,
                mbps: o.req("mbps")?,
            },
            "type, server, mbps",
        ),
        "measured" => {
            let server = o.req("server")?;
            let measurement = measurement(o.object("measurement")?)?;
            (
                Event::Measured {
                    server,
                    measurement,
                },
                "type, server, measurement",
            )
        }
        #[cfg(test)]
        "test_panic" => panic!("test_panic event"),
        other => {
            return Err(JsonError::new(
                "event.type",
                format!(
                    "unknown event type {other:?}; expected one of {}",
                    EVENT_TYPES.join(", ")
                ),
            ));
        }
    };
    o.finish(expected)?;
    Ok(event)
}

/// `{"name": "main", "servers": [{"id": "a", "name": "A"}]}`
fn subscription(path: String, v: Value) -> Result<Subscription, JsonError> {
    let mut o = Object::new(path, v)?;
    let name = o.req("name")?;
    let servers = o
        .list("servers")?
        .into_iter()
        .map(|(path, v)| server(path, v))
        .collect::<Result<_, _>>()?;
    o.finish("name, servers")?;
    Ok(Subscription { name, servers })
}

/// `{"id": "a", "name": "A"}`, the name defaulting to the id.
fn server(path: String, v: Value) -> Result<Server, JsonError> {
    let mut o = Object::new(path, v)?;
    let id: ServerId = o.req("id")?;
    let name = o.opt("name")?.unwrap_or_else(|| id.as_str().to_owned());
    o.finish("id, name")?;
    Ok(Server { id, name })
}

/// `{"server": "a", "total_ms": 120, "request_ms": 40, "status": 204}`, or
/// `"total_ms": null` for no answer.
fn reply(path: String, v: Value) -> Result<(ServerId, ProbeReply), JsonError> {
    let mut o = Object::new(path, v)?;
    let server = o.req("server")?;
    let total_ms = o.nullable("total_ms")?;
    let request_ms = o.opt("request_ms")?;
    let status = o.opt("status")?;
    let reply = match total_ms {
        Some(total_ms) => ProbeReply::Answered {
            total_ms,
            request_ms,
            status,
        },
        None => {
            for (key, given) in [
                ("request_ms", request_ms.is_some()),
                ("status", status.is_some()),
            ] {
                if given {
                    return Err(JsonError::new(
                        o.path_of(key),
                        "given for a server that did not answer (total_ms is null)",
                    ));
                }
            }
            ProbeReply::NoAnswer
        }
    };
    o.finish("server, total_ms, request_ms, status")?;
    Ok((server, reply))
}

/// `{"at": 1767225600000, "method": "url", "ms": 140}`, `"ms": null` for no answer.
fn measurement(mut o: Object) -> Result<Measurement, JsonError> {
    let at = Timestamp(o.req("at")?);
    let method: Method = o.req("method")?;
    let ms = o.nullable("ms")?;
    o.finish("at, method, ms")?;
    Ok(Measurement { at, method, ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse_event(text).unwrap_err().to_string()
    }

    #[test]
    fn every_type_reads() {
        let cases = [
            (
                r#"{"type":"subscriptions","subscriptions":[{"name":"m","servers":[{"id":"a","name":"A"},{"id":"b"}]}]}"#,
                Event::Subscriptions(vec![Subscription {
                    name: "m".into(),
                    servers: vec![
                        Server {
                            id: ServerId::new("a"),
                            name: "A".into(),
                        },
                        Server::named("b"),
                    ],
                }]),
            ),
            (
                r#"{"type":"subscription_updated","subscription":{"name":"m","servers":[]}}"#,
                Event::SubscriptionUpdated(Subscription::of_names("m", &[])),
            ),
            (
                r#"{"type":"auto_on","subscription":"m"}"#,
                Event::AutoOn {
                    subscription: "m".into(),
                },
            ),
            (
                r#"{"type":"connect_failed","server":"a"}"#,
                Event::ConnectFailed {
                    server: ServerId::new("a"),
                },
            ),
            (
                r#"{"type":"probe_results","check":7,"replies":[{"server":"a","total_ms":null},{"server":"b","total_ms":90,"request_ms":30,"status":204},{"server":"c","total_ms":50}]}"#,
                Event::ProbeResults {
                    check: CheckId(7),
                    replies: vec![
                        (ServerId::new("a"), ProbeReply::NoAnswer),
                        (
                            ServerId::new("b"),
                            ProbeReply::Answered {
                                total_ms: 90,
                                request_ms: Some(30),
                                status: Some(204),
                            },
                        ),
                        (ServerId::new("c"), ProbeReply::after(50)),
                    ],
                },
            ),
            (
                r#"{"type":"network_available","available":false}"#,
                Event::NetworkAvailable(false),
            ),
            (r#"{"type":"network_changed"}"#, Event::NetworkChanged),
            (
                r#"{"type":"mark","servers":["a","b"]}"#,
                Event::Mark(vec![ServerId::new("a"), ServerId::new("b")]),
            ),
            (r#"{"type":"unmark","servers":[]}"#, Event::Unmark(vec![])),
            (r#"{"type":"marks_done"}"#, Event::MarksDone),
            (
                r#"{"type":"speed_test","server":"a","mbps":93}"#,
                Event::SpeedTest {
                    server: ServerId::new("a"),
                    mbps: 93.0,
                },
            ),
            (
                r#"{"type":"measured","server":"a","measurement":{"at":-5000,"method":"tcp","ms":null}}"#,
                Event::Measured {
                    server: ServerId::new("a"),
                    measurement: Measurement::silent(Timestamp(-5000), Method::Tcp),
                },
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_event(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(err(r#"{"sent":1}"#), "event.type: missing");
        assert!(err(r#"{"type":"trafic"}"#).starts_with(
            "event.type: unknown event type \"trafic\"; expected one of subscriptions,"
        ));
        assert_eq!(
            err(r#"{"type":"traffic","sent":1}"#),
            "event.received: missing"
        );
        assert!(err(r#"{"type":"traffic","sent":-1,"received":0}"#).starts_with("event.sent: "));
        assert_eq!(
            err(r#"{"type":"traffic","sent":1,"received":0,"recieved":0}"#),
            "event.recieved: unknown field; expected type, sent, received"
        );
        assert!(
            err(r#"{"type":"subscriptions","subscriptions":[{"name":"m","servers":[{"id":"a"},{"id":5}]}]}"#)
                .starts_with("event.subscriptions[0].servers[1].id: invalid type: integer `5`")
        );
        assert_eq!(
            err(
                r#"{"type":"probe_results","check":1,"replies":[{"server":"a","total_ms":1},{"server":"b"}]}"#
            ),
            "event.replies[1].total_ms: missing"
        );
        assert!(
            err(r#"{"type":"probe_results","check":1,"replies":[{"server":"a","total_ms":null,"status":200}]}"#)
                .starts_with("event.replies[0].status: given for a server that did not answer")
        );
        assert!(
            err(
                r#"{"type":"measured","server":"a","measurement":{"at":0,"method":"ping","ms":1}}"#
            )
            .starts_with("event.measurement.method: unknown variant `ping`")
        );
        assert_eq!(
            err(r#"{"type":"mark","servers":"a"}"#),
            "event.servers: invalid type: string \"a\", expected a sequence"
        );
        assert_eq!(err("[]"), "event: expected an object, got an array");
        assert!(err(r#"{"type":"#).starts_with("event: not valid JSON: "));
        assert!(err("").starts_with("event: not valid JSON: "));
    }
}
