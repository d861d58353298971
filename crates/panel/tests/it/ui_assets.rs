//! The web UI as the panel serves it, and the API calls it makes beyond the others:
//! the page and its modules with a strict policy, the first-run hint, and a user's
//! subscription link with its QR code (decoded back to the link).

use crate::common::Harness;

use axum::http::StatusCode;
use serde_json::json;

#[tokio::test]
async fn the_page_and_its_modules_come_with_a_strict_policy() {
    let h = Harness::new().await;
    let page = h.get("/").send().await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(
        page.header("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert!(
        page.text()
            .contains(r#"<script type="module" src="/ui/js/app.js"></script>"#),
        "{}",
        page.text()
    );
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(
        page.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );
    let app = h.get("/ui/js/app.js").send().await;
    assert_eq!(app.status, StatusCode::OK);
    assert_eq!(
        app.header("content-type").as_deref(),
        Some("text/javascript; charset=utf-8")
    );
    let again = h
        .get("/ui/js/app.js")
        .header("if-none-match", &app.header("etag").unwrap())
        .send()
        .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert_eq!(
        h.get("/ui/js/nope.js").send().await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        h.get("/ui/../Cargo.toml").send().await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn the_first_run_hint_names_the_password_file_while_it_exists() {
    let h = Harness::new().await;
    let file = h
        .state
        .config()
        .data_dir
        .join(switchyard_panel::run::PASSWORD_FILE);
    let _ = std::fs::remove_file(&file);
    let r = h.get("/api/v1/setup").send().await.ok(StatusCode::OK);
    assert_eq!(r, json!({"password_file": null, "logged_in": false}));
    std::fs::write(&file, "username: admin\n").unwrap();
    let r = h.get("/api/v1/setup").send().await.ok(StatusCode::OK);
    // The file's name only: the answer is public, the panel's paths are not.
    assert_eq!(r["password_file"], switchyard_panel::run::PASSWORD_FILE);
    std::fs::remove_file(&file).unwrap();
    let s = h.login().await;
    let r = h
        .get("/api/v1/setup")
        .cookie(&s)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(r, json!({"password_file": null, "logged_in": true}));
}

/// The text of the QR code an SVG of ours draws (runs of dark modules, `M x y h n …`).
fn decode_svg_qr(svg: &str) -> String {
    let size: usize = svg
        .split("viewBox=\"0 0 ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    let mut dark = vec![false; size * size];
    let d = svg
        .split(" d=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    for run in d.split('M').filter(|r| !r.is_empty()) {
        let (xy, rest) = run.split_once('h').unwrap();
        let (x, y) = xy.split_once(' ').unwrap();
        let (x, y): (usize, usize) = (x.parse().unwrap(), y.parse().unwrap());
        let n: usize = rest.split('v').next().unwrap().parse().unwrap();
        for i in 0..n {
            dark[y * size + x + i] = true;
        }
    }
    // The code itself, without the quiet zone around it (its finder patterns start
    // at the first dark row).
    let quiet = (0..size)
        .find(|y| dark[y * size..(y + 1) * size].contains(&true))
        .unwrap();
    let width = size - 2 * quiet;
    let grid = rqrr::SimpleGrid::from_func(width, |x, y| dark[(y + quiet) * size + x + quiet]);
    rqrr::Grid::new(grid).decode().expect("a QR code").1
}

#[tokio::test]
async fn a_user_s_link_and_its_qr_code_follow_a_revoke() {
    let h = Harness::new().await;
    let t = h.token().await;
    let u = h
        .post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "alice"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let id = u["id"].as_i64().unwrap();
    let link = h
        .get(&format!("/api/v1/users/{id}/subscription"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    let base = h.state.config().public_base();
    let url = format!("{base}{}", u["subscription_path"].as_str().unwrap());
    assert_eq!(
        link,
        json!({"url": url, "qr_path": format!("/api/v1/users/{id}/subscription.svg")})
    );
    let qr = h
        .get(&format!("/api/v1/users/{id}/subscription.svg"))
        .bearer(&t)
        .send()
        .await;
    assert_eq!(qr.status, StatusCode::OK);
    assert_eq!(qr.header("content-type").as_deref(), Some("image/svg+xml"));
    assert!(
        qr.text()
            .starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" ")
    );
    assert_eq!(decode_svg_qr(&qr.text()), url);

    let revoked = h
        .post(&format!("/api/v1/users/{id}/revoke-subscription"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    let new_url = format!("{base}{}", revoked["subscription_path"].as_str().unwrap());
    assert_ne!(new_url, url);
    let qr = h
        .get(&format!("/api/v1/users/{id}/subscription.svg"))
        .bearer(&t)
        .send()
        .await;
    assert_eq!(decode_svg_qr(&qr.text()), new_url);
    // Like every read of a user, it needs a session or a token.
    h.get(&format!("/api/v1/users/{id}/subscription.svg"))
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
    h.get("/api/v1/users/999/subscription")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_server_s_history_is_served_for_its_charts() {
    use switchyard_panel::model::{Health, HealthSettings, Observation};
    use switchyard_panel::store::ServerReport;
    let h = Harness::new().await;
    let t = h.token().await;
    let c = h
        .post("/api/v1/clusters")
        .bearer(&t)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let s = h
        .post("/api/v1/servers")
        .bearer(&t)
        .json(&json!({"cluster_id": c["id"], "name": "de-1", "address": "203.0.113.1"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let id = s["id"].as_i64().unwrap();
    let now = switchyard_node::accounting::now_ms();
    let mut health = Health::new(now, HealthSettings::default());
    health.observe(now, Observation::Answered);
    for users in [2, 4] {
        h.state
            .store()
            .report_server(
                id,
                &ServerReport {
                    health: health.clone(),
                    config_version: None,
                    users_online: users,
                    throughput: (1000, 3000),
                    capacity: None,
                    node_version: None,
                    binary_sha256: None,
                },
                now,
            )
            .await
            .unwrap();
    }
    let history = h
        .get(&format!("/api/v1/servers/{id}/history"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    let minute = now.div_euclid(60_000) * 60_000;
    assert_eq!(
        history,
        json!({"step": "minute", "step_ms": 60_000, "points": [{
            "at_ms": minute, "up_bytes_per_s": 1000, "down_bytes_per_s": 3000,
            "users_online": 3, "users_max": 4,
        }]})
    );
    let hourly = h
        .get(&format!("/api/v1/servers/{id}/history?step=hour"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        (
            &hourly["step_ms"],
            hourly["points"].as_array().unwrap().len()
        ),
        (&json!(3_600_000), 1)
    );
    let bad = h
        .get(&format!("/api/v1/servers/{id}/history?step=week"))
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(bad["errors"][0]["field"], "step");
    h.get("/api/v1/servers/999/history")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
}
