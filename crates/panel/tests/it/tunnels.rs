//! Tunnels through the API, without a socket: create with the spec's defaults and a
//! certificate the panel issued, every validation error naming its field, the name
//! fixed after saving, servers in a tunnel kept, duplicate for another relay (new
//! name, new certificate and REALITY keys), re-issue (the old pin kept for the overlap,
//! the REALITY keys untouched), delete; REALITY as a new tunnel's first profile's
//! default, kept on a change, made for a tunnel from before REALITY; no private key in
//! any answer.

use crate::common;

use axum::http::StatusCode;
use common::{Harness, vless};
use serde_json::{Value, json};
use switchyard_panel::store::{ServerStore, TunnelStore};
use switchyard_tunnel::credentials::{certificate_name, tunnel_tag};

/// A cluster with servers `relay`, `origin-a`, `origin-b`, `relay-2`; their ids.
async fn servers(h: &Harness, token: &str) -> Vec<i64> {
    let c = h
        .post("/api/v1/clusters")
        .bearer(token)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let mut ids = Vec::new();
    for (i, name) in ["relay", "origin-a", "origin-b", "relay-2"]
        .iter()
        .enumerate()
    {
        ids.push(
            h.post("/api/v1/servers")
                .bearer(token)
                .json(&json!({"cluster_id": c, "name": name, "address": format!("203.0.113.{}", i + 1)}))
                .send()
                .await
                .ok(StatusCode::CREATED)["id"]
                .as_i64()
                .unwrap(),
        );
    }
    ids
}

fn no_secret_in(v: &Value) {
    let text = v.to_string();
    assert!(!text.contains("PRIVATE KEY"), "{text}");
    // The REALITY private key (and the short id) are the nodes' only.
    assert!(
        !text.contains("private_key") && !text.contains("short_id"),
        "{text}"
    );
    // Only the credential epochs (counters, not secrets) may be named.
    let without_epochs = text
        .replace("\"credential_epoch\"", "")
        .replace("\"previous_credential_epoch\"", "");
    assert!(
        !text.contains("key_pem") && !without_epochs.contains("credential"),
        "{text}"
    );
}

#[tokio::test]
async fn a_tunnel_from_create_to_delete() {
    let h = Harness::new().await;
    let token = h.token().await;
    let s = servers(&h, &token).await;
    let (relay, a, b, relay2) = (s[0], s[1], s[2], s[3]);

    let t = h
        .post("/api/v1/tunnels")
        .bearer(&token)
        .json(&json!({"name": "eu-exit", "relay_server_id": relay, "origin_server_ids": [a, b]}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    no_secret_in(&t);
    let id = t["id"].as_i64().unwrap();
    assert_eq!(t["name"], "eu-exit");
    assert_eq!(t["tag"], tunnel_tag("eu-exit"));
    assert_eq!(t["certificate_name"], certificate_name("eu-exit"));
    assert_eq!(t["mode"], "reverse");
    assert_eq!(t["balancing"], "distribute");
    assert_eq!((&t["links"], &t["window_mib"]), (&json!(4), &json!(16)));
    // The first profile says no security: REALITY, in front of the default target.
    assert_eq!(
        t["profiles"],
        json!([{"port": 7443, "security": "reality", "transport": {"type": "tcp"}, "addresses": [],
            "reality_dest": "www.microsoft.com:443", "reality_server_name": "www.microsoft.com", "links": 4}])
    );
    // The panel made the tunnel's REALITY keys: the public key is shown, the private
    // key (and the short id) never.
    let reality = h.store.tunnel_reality_keys(id).await.unwrap().unwrap();
    assert_eq!(t["reality_public_key"], reality.public_key.as_str());
    assert_eq!(reality.short_id.len(), 16, "8 random bytes in hex");
    assert!(!t.to_string().contains(&reality.private_key));
    assert!(!t.to_string().contains(&reality.short_id));
    assert!(!format!("{reality:?}").contains(&reality.private_key));
    assert_eq!(
        t["origins"],
        json!([{"server_id": a, "name": format!("server-{a}")}, {"server_id": b, "name": format!("server-{b}")}])
    );
    assert_eq!(t["enabled"], true);
    assert_eq!(t["previous_pin"], Value::Null);
    let pin = t["certificate_pin"].as_str().unwrap().to_owned();
    assert!(pin.starts_with("cert:") && pin.len() == 5 + 64, "{pin}");

    // The certificate the store keeps is issued for the derived name, and its pin is
    // the one shown.
    let cert = h.store.tunnel_certificate(id).await.unwrap();
    assert_eq!(cert.pin, pin);
    assert!(cert.key_pem.contains("PRIVATE KEY"));
    let chain = switchyard_tunnel::link::cert::read_pem(&cert.cert_pem, &cert.key_pem).unwrap();
    assert_eq!(
        switchyard_tunnel::link::pin::Pin::of_certificate(&chain.0[0]).to_string(),
        pin
    );
    assert!(!format!("{cert:?}").contains("PRIVATE KEY"));

    // Read back, listed.
    assert_eq!(
        h.get(&format!("/api/v1/tunnels/{id}"))
            .bearer(&token)
            .send()
            .await
            .ok(StatusCode::OK),
        t
    );
    assert_eq!(
        h.get("/api/v1/tunnels")
            .bearer(&token)
            .send()
            .await
            .ok(StatusCode::OK),
        json!([t])
    );

    // A change: everything but the name.
    let changed = h
        .put(&format!("/api/v1/tunnels/{id}"))
        .bearer(&token)
        .json(&json!({
            "name": "eu-exit", "relay_server_id": relay, "origin_server_ids": [b],
            "balancing": "priority", "links": 6, "window_mib": 8,
            "profiles": [
                {"port": 7443, "addresses": ["relay.example.com:7443", "[2001:db8::1]:7443"]},
                {"port": 8443, "transport": {"type": "ws", "path": "/t", "host": "cdn.example.com"}},
            ],
            "rules": {"suffixes": ["example.org"], "cidrs": ["10.0.0.0/8"], "ports": [443]},
            "enabled": false,
        }))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        changed["origins"],
        json!([{"server_id": b, "name": format!("server-{b}")}])
    );
    assert_eq!(changed["balancing"], "priority");
    assert_eq!(
        (&changed["links"], &changed["window_mib"]),
        (&json!(6), &json!(8))
    );
    assert_eq!(
        changed["profiles"][1]["transport"],
        json!({"type": "ws", "path": "/t", "host": "cdn.example.com"})
    );
    // A profile that says no security keeps its port's (and its target); a new port
    // is TLS, and a TLS profile's JSON is what it always was, with its links.
    assert_eq!(
        (
            &changed["profiles"][0]["security"],
            &changed["profiles"][0]["reality_dest"]
        ),
        (&json!("reality"), &t["profiles"][0]["reality_dest"])
    );
    assert_eq!(
        changed["profiles"][1],
        json!({"port": 8443, "security": "tls", "addresses": [], "links": 6,
            "transport": {"type": "ws", "path": "/t", "host": "cdn.example.com"}})
    );
    assert_eq!(changed["reality_public_key"], t["reality_public_key"]);
    assert_eq!(
        changed["rules"],
        json!({"domains": [], "suffixes": ["example.org"], "cidrs": ["10.0.0.0/8"], "ports": [443]})
    );
    assert_eq!(changed["enabled"], false);
    assert_eq!(
        changed["certificate_pin"],
        pin.as_str(),
        "a change keeps the certificate"
    );

    // The name is fixed.
    let p = h
        .put(&format!("/api/v1/tunnels/{id}"))
        .bearer(&token)
        .json(&json!({"name": "eu-exit-2", "relay_server_id": relay, "origin_server_ids": [b]}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("cannot change after saving"),
        "{p}"
    );

    // A server in a tunnel stays.
    let p = h
        .delete(&format!("/api/v1/servers/{b}"))
        .bearer(&token)
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "id");
    assert!(p["detail"].as_str().unwrap().contains("eu-exit"), "{p}");

    // The relay listens on the profiles' ports: an inbound can't take them; the
    // origins (dialing in reverse mode) can.
    h.post("/api/v1/inbounds")
        .bearer(&token)
        .json(&vless(relay, "clash", 8443))
        .send()
        .await
        .field_error(StatusCode::CONFLICT, "port");
    h.post("/api/v1/inbounds")
        .bearer(&token)
        .json(&vless(b, "fine", 8443))
        .send()
        .await
        .ok(StatusCode::CREATED);

    // Re-issue: a new certificate, the old pin kept for the overlap.
    let re = h
        .post(&format!("/api/v1/tunnels/{id}/certificate"))
        .bearer(&token)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_ne!(re["certificate_pin"], pin.as_str());
    assert_eq!(re["previous_pin"], pin.as_str());
    let again = h.store.tunnel_certificate(id).await.unwrap();
    assert_ne!(again.key_pem, cert.key_pem, "a re-issue brings a new key");
    assert_eq!(
        h.store.tunnel_reality_keys(id).await.unwrap(),
        Some(reality.clone()),
        "a re-issue leaves the REALITY keys alone"
    );
    assert_eq!(re["reality_public_key"], t["reality_public_key"]);
    assert_eq!(again.pin, re["certificate_pin"].as_str().unwrap());

    // Rotate credentials: the epoch goes up, the previous one is kept for the
    // overlap; the pin is untouched; no credential in the answer.
    assert_eq!(
        (&t["credential_epoch"], &t["previous_credential_epoch"]),
        (&json!(0), &Value::Null)
    );
    let rot = h
        .post(&format!("/api/v1/tunnels/{id}/rotate-credentials"))
        .bearer(&token)
        .send()
        .await
        .ok(StatusCode::OK);
    no_secret_in(&rot);
    assert_eq!(
        (&rot["credential_epoch"], &rot["previous_credential_epoch"]),
        (&json!(1), &json!(0))
    );
    assert_eq!(rot["certificate_pin"], re["certificate_pin"]);
    let rot = h
        .post(&format!("/api/v1/tunnels/{id}/rotate-credentials"))
        .bearer(&token)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        (&rot["credential_epoch"], &rot["previous_credential_epoch"]),
        (&json!(2), &json!(1)),
        "a rotation during a rotation keeps the latest two"
    );
    h.post("/api/v1/tunnels/999/rotate-credentials")
        .bearer(&token)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.post(&format!("/api/v1/tunnels/{id}/rotate-credentials"))
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);

    // Duplicate for another relay: new name, new certificate, same shape, the link
    // addresses of the first relay left behind.
    let dup = h
        .post(&format!("/api/v1/tunnels/{id}/duplicate"))
        .bearer(&token)
        .json(&json!({"name": "eu-exit-r2", "relay_server_id": relay2}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    no_secret_in(&dup);
    assert_eq!(dup["relay_server_id"], relay2);
    assert_eq!(dup["origins"], changed["origins"]);
    assert_eq!(dup["balancing"], "priority");
    assert_eq!((&dup["links"], &dup["window_mib"]), (&json!(6), &json!(8)));
    assert_eq!(dup["profiles"][0]["addresses"], json!([]));
    assert_eq!(
        dup["profiles"][1]["transport"],
        changed["profiles"][1]["transport"]
    );
    assert_eq!(dup["rules"], changed["rules"]);
    assert_eq!(dup["tag"], tunnel_tag("eu-exit-r2"));
    assert_ne!(dup["certificate_pin"], re["certificate_pin"]);
    assert_eq!(dup["previous_pin"], Value::Null);
    // Its own REALITY keys, the same target.
    assert_ne!(dup["reality_public_key"], t["reality_public_key"]);
    let dup_reality = h
        .store
        .tunnel_reality_keys(dup["id"].as_i64().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_ne!(dup_reality.private_key, reality.private_key);
    assert_ne!(dup_reality.short_id, reality.short_id);
    assert_eq!(dup["profiles"][0]["security"], "reality");
    assert_eq!(
        dup["profiles"][0]["reality_dest"],
        changed["profiles"][0]["reality_dest"]
    );
    h.post(&format!("/api/v1/tunnels/{id}/duplicate"))
        .bearer(&token)
        .json(&json!({"name": "eu-exit-r3", "relay_server_id": b}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "relay_server_id");
    h.post(&format!("/api/v1/tunnels/{id}/duplicate"))
        .bearer(&token)
        .json(&json!({"name": "eu-exit", "relay_server_id": relay2}))
        .send()
        .await
        .field_error(StatusCode::CONFLICT, "name");

    // With no node connected to this panel, the state says so, and a reset reaches
    // no one.
    let st = h
        .get(&format!("/api/v1/tunnels/{id}/status"))
        .bearer(&token)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(st["state"], "Relay unreachable", "{st}");
    assert_eq!(
        (st["links"].as_u64(), &st["relay"]),
        (Some(0), &Value::Null)
    );
    assert!(st["error"].as_str().is_some_and(|e| !e.is_empty()), "{st}");
    assert_eq!(st["origins"][0]["server_id"], b);
    assert_eq!(st["origins"][0]["half"], Value::Null);
    let states = h
        .get("/api/v1/tunnels/status")
        .bearer(&token)
        .send()
        .await
        .ok(StatusCode::OK);
    let ids: Vec<i64> = states
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [id, dup["id"].as_i64().unwrap()]);
    assert!(
        states
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["state"] == "Relay unreachable")
    );
    let outcome = h
        .post(&format!("/api/v1/tunnels/{id}/reset"))
        .bearer(&token)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(outcome.as_array().unwrap().len(), 2, "{outcome}");
    assert!(
        outcome
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["reset"] == false && o["error"].is_string())
    );
    h.get("/api/v1/tunnels/999/status")
        .bearer(&token)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    // No traffic yet: the chart has no points.
    let usage = h
        .get(&format!("/api/v1/tunnels/{id}/usage"))
        .bearer(&token)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        usage,
        json!({"step": "minute", "step_ms": 60000, "points": []})
    );
    let usage = h
        .get(&format!("/api/v1/tunnels/{id}/usage?step=hour&since_ms=0"))
        .bearer(&token)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        usage,
        json!({"step": "hour", "step_ms": 3600000, "points": []})
    );
    h.get(&format!("/api/v1/tunnels/{id}/usage?step=second"))
        .bearer(&token)
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "step");
    h.get("/api/v1/tunnels/999/usage")
        .bearer(&token)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);

    // Delete; then the server may go.
    for t in [id, dup["id"].as_i64().unwrap()] {
        h.delete(&format!("/api/v1/tunnels/{t}"))
            .bearer(&token)
            .send()
            .await
            .ok(StatusCode::NO_CONTENT);
    }
    h.get(&format!("/api/v1/tunnels/{id}"))
        .bearer(&token)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.delete(&format!("/api/v1/tunnels/{id}"))
        .bearer(&token)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.delete(&format!("/api/v1/servers/{b}"))
        .bearer(&token)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    assert_eq!(
        h.get("/api/v1/tunnels")
            .bearer(&token)
            .send()
            .await
            .ok(StatusCode::OK),
        json!([])
    );
}

#[tokio::test]
async fn errors_name_the_field_and_change_nothing() {
    let h = Harness::new().await;
    let token = h.token().await;
    let s = servers(&h, &token).await;
    let (relay, a) = (s[0], s[1]);
    // An inbound on the relay holds port 7443.
    h.post("/api/v1/inbounds")
        .bearer(&token)
        .json(&vless(relay, "busy", 7443))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let base = json!({"name": "t1", "relay_server_id": relay, "origin_server_ids": [a],
        "profiles": [{"port": 8443}]});
    let with = |patch: Value| {
        let mut v = base.clone();
        for (k, x) in patch.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let cases = [
        (
            with(json!({"name": "no spaces"})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "name",
        ),
        (
            with(json!({"origin_server_ids": []})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "origin_server_ids",
        ),
        (
            with(json!({"origin_server_ids": [a, relay]})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "origin_server_ids[1]",
        ),
        (
            with(json!({"origin_server_ids": [a, 999]})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "origin_server_ids[1]",
        ),
        (
            with(json!({"relay_server_id": 999})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "relay_server_id",
        ),
        (
            with(json!({"links": 0})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "links",
        ),
        (
            with(json!({"window_mib": 65})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "window_mib",
        ),
        (
            with(json!({"profiles": []})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "profiles",
        ),
        (
            with(json!({"profiles": [{"port": 7443}]})),
            StatusCode::CONFLICT,
            "profiles[0].port",
        ),
        (
            with(json!({"profiles": [{"port": 8443}, {"port": 8443}]})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "profiles[1].port",
        ),
        (
            with(json!({"profiles": [{"port": 8443, "addresses": ["nohost"]}]})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "profiles[0].addresses[0]",
        ),
        (
            with(json!({"rules": {"cidrs": ["10.0.0.0/40"]}})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "rules.cidrs[0]",
        ),
        (
            with(
                json!({"profiles": [{"port": 8443, "security": "reality", "transport": {"type": "ws", "path": "/t"}}]}),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "profiles[0].transport",
        ),
        (
            // The first profile defaults to REALITY, so WebSocket needs TLS said.
            with(json!({"profiles": [{"port": 8443, "transport": {"type": "ws", "path": "/t"}}]})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "profiles[0].transport",
        ),
        (
            with(json!({"profiles": [{"port": 8443, "reality_dest": "www.example.org"}]})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "profiles[0].reality_dest",
        ),
        (
            with(json!({"profiles": [{"port": 8443, "reality_dest": "10.0.0.1:443"}]})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "profiles[0].reality_server_name",
        ),
        (
            with(
                json!({"profiles": [{"port": 8443, "security": "tls", "reality_dest": "www.example.org:443"}]}),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "profiles[0].reality_dest",
        ),
    ];
    for (body, status, field) in cases {
        h.post("/api/v1/tunnels")
            .bearer(&token)
            .json(&body)
            .send()
            .await
            .field_error(status, field);
    }
    // Unknown fields (a credential the operator tries to set) are refused.
    h.post("/api/v1/tunnels")
        .bearer(&token)
        .json(&with(json!({"credential": "00"})))
        .send()
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        h.get("/api/v1/tunnels")
            .bearer(&token)
            .send()
            .await
            .ok(StatusCode::OK),
        json!([])
    );
    // Without a token: 401.
    h.get("/api/v1/tunnels")
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
    h.post("/api/v1/tunnels")
        .json(&base)
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
}

/// `mode: "direct"` through the API: kept, the origins listen (an inbound can't take
/// a profile's port on an origin; on the relay it can), and the rendered halves are
/// the direct ones: the relay dials the origins' addresses pinning the certificate,
/// each origin presents it.
#[tokio::test]
async fn a_direct_tunnel_through_the_api() {
    let h = Harness::new().await;
    let token = h.token().await;
    let s = servers(&h, &token).await;
    let (relay, a) = (s[0], s[1]);
    let t = h
        .post("/api/v1/tunnels")
        .bearer(&token)
        .json(
            &json!({"name": "dial-out", "relay_server_id": relay, "origin_server_ids": [a],
            "mode": "direct", "profiles": [{"port": 9443}]}),
        )
        .send()
        .await
        .ok(StatusCode::CREATED);
    no_secret_in(&t);
    assert_eq!(t["mode"], "direct");
    let id = t["id"].as_i64().unwrap();
    assert_eq!(
        h.get(&format!("/api/v1/tunnels/{id}"))
            .bearer(&token)
            .send()
            .await
            .ok(StatusCode::OK)["mode"],
        "direct"
    );
    h.post("/api/v1/inbounds")
        .bearer(&token)
        .json(&vless(a, "on the origin", 9443))
        .send()
        .await
        .field_error(StatusCode::CONFLICT, "port");
    h.post("/api/v1/inbounds")
        .bearer(&token)
        .json(&vless(relay, "on the relay", 9443))
        .send()
        .await
        .ok(StatusCode::CREATED);

    let now = switchyard_node::accounting::now_ms();
    let render = async |server: i64| {
        let snapshot = h.store.server_snapshot(server, now).await.unwrap();
        switchyard_panel::render::render(&snapshot, now).unwrap()
    };
    let relay_config = render(relay).await;
    let half = relay_config.tunnels[0].relay.as_ref().unwrap();
    assert_eq!(half.all_pins(), [t["certificate_pin"].as_str().unwrap()]);
    assert_eq!(half.origins[0].all_hosts(), ["203.0.113.2"]);
    assert!(half.cert_pem.is_none() && half.key_pem.is_none());
    assert!(
        half.reality_private_key.is_none(),
        "the dialing relay gets no REALITY key"
    );
    let origin_config = render(a).await;
    let half = origin_config.tunnels[0].origin.as_ref().unwrap();
    assert!(half.cert_pem.is_some() && half.key_pem.is_some());
    assert!(half.all_pins().is_empty());
    // The first profile is REALITY: the listening origin holds the private key, both
    // halves run the same REALITY transport.
    let reality = h.store.tunnel_reality_keys(id).await.unwrap().unwrap();
    assert_eq!(
        half.reality_private_key.as_ref().map(|k| k.expose()),
        Some(reality.private_key.as_str())
    );
    let expected = switchyard_node::config::TunnelTransport::Reality {
        server_name: "www.microsoft.com".into(),
        dest: "www.microsoft.com:443".into(),
        public_key: reality.public_key.clone(),
        short_id: reality.short_id.clone(),
    };
    assert_eq!(origin_config.tunnels[0].profiles[0].transport, expected);
    assert_eq!(relay_config.tunnels[0].profiles[0].transport, expected);

    // Back to reverse: the origin's port is free for an inbound, the relay's is not
    // (its inbound holds it, so the change is refused, naming the profile's port).
    h.put(&format!("/api/v1/tunnels/{id}"))
        .bearer(&token)
        .json(
            &json!({"name": "dial-out", "relay_server_id": relay, "origin_server_ids": [a],
            "profiles": [{"port": 9443}]}),
        )
        .send()
        .await
        .field_error(StatusCode::CONFLICT, "profiles[0].port");
}

/// A tunnel made before REALITY (schema v9: no REALITY keys) keeps running its TLS
/// profiles; the first change that gives it a REALITY profile makes its keys (once),
/// and its halves then run REALITY.
#[tokio::test]
async fn a_tunnel_made_before_reality_gets_its_keys_with_its_first_reality_profile() {
    let h = Harness::new().await;
    let token = h.token().await;
    let s = servers(&h, &token).await;
    let (relay, a) = (s[0], s[1]);
    let body = json!({"name": "old", "relay_server_id": relay, "origin_server_ids": [a],
        "profiles": [{"port": 7443, "security": "tls"}]});
    let t = h
        .post("/api/v1/tunnels")
        .bearer(&token)
        .json(&body)
        .send()
        .await
        .ok(StatusCode::CREATED);
    let id = t["id"].as_i64().unwrap();
    assert_eq!(t["profiles"][0]["security"], "tls");
    // As a tunnel made before schema v10 has it.
    {
        use sqlx::Connection;
        let url = format!("sqlite://{}", h.db.display());
        let mut conn = sqlx::sqlite::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query(
            "UPDATE tunnels SET reality_private_key = NULL, reality_public_key = NULL, \
             reality_short_id = NULL",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
    }
    let now = switchyard_node::accounting::now_ms();
    let relay_half = async || {
        let snapshot = h.store.server_snapshot(relay, now).await.unwrap();
        switchyard_panel::render::render(&snapshot, now)
            .unwrap()
            .tunnels
            .remove(0)
    };
    let path = format!("/api/v1/tunnels/{id}");
    let got = h.get(&path).bearer(&token).send().await.ok(StatusCode::OK);
    assert_eq!(got["reality_public_key"], Value::Null);
    assert_eq!(
        relay_half().await.profiles[0].transport,
        switchyard_node::config::TunnelTransport::Tls,
        "its TLS profile runs without keys"
    );
    // A change that keeps TLS makes none; one that asks for REALITY does.
    let same = h
        .put(&path)
        .bearer(&token)
        .json(
            &json!({"name": "old", "relay_server_id": relay, "origin_server_ids": [a],
            "profiles": [{"port": 7443}]}),
        )
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        (
            &same["profiles"][0]["security"],
            &same["reality_public_key"]
        ),
        (&json!("tls"), &Value::Null),
        "an omitted security keeps the port's TLS"
    );
    let changed = h
        .put(&path)
        .bearer(&token)
        .json(&json!({"name": "old", "relay_server_id": relay, "origin_server_ids": [a],
            "profiles": [{"port": 7443, "security": "reality", "reality_dest": "www.example.org:443"}]}))
        .send()
        .await
        .ok(StatusCode::OK);
    no_secret_in(&changed);
    let keys = h.store.tunnel_reality_keys(id).await.unwrap().unwrap();
    assert_eq!(changed["reality_public_key"], keys.public_key.as_str());
    assert_eq!(
        changed["profiles"][0]["reality_server_name"],
        "www.example.org"
    );
    let half = relay_half().await;
    assert_eq!(
        half.profiles[0].transport,
        switchyard_node::config::TunnelTransport::Reality {
            server_name: "www.example.org".into(),
            dest: "www.example.org:443".into(),
            public_key: keys.public_key.clone(),
            short_id: keys.short_id.clone(),
        }
    );
    assert_eq!(
        half.relay
            .unwrap()
            .reality_private_key
            .as_ref()
            .map(|k| k.expose().to_owned()),
        Some(keys.private_key.clone())
    );
    // Another change keeps them.
    h.put(&path)
        .bearer(&token)
        .json(
            &json!({"name": "old", "relay_server_id": relay, "origin_server_ids": [a],
            "links": 2, "profiles": [{"port": 7443}]}),
        )
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(h.store.tunnel_reality_keys(id).await.unwrap(), Some(keys));
}
