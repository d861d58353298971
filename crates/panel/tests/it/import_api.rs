//! An import through the API, as the web UI sends it: the source's database as the
//! request body. A dry run keeps nothing and says what would happen; the import
//! writes; what is not a database, not the source's, too large or unknown is
//! refused with a problem naming why, and a second import while one runs gets 409.
//! The uploaded file does not stay in the data directory. Remnawave's database is
//! named by its URL instead, and a bad URL is refused without its password; so is
//! Marzban's on MySQL (a private MariaDB server with Marzban's own schema and users).
//! PasarGuard and Marzneshin on PostgreSQL or MySQL are named by URL as well. With `server`, the
//! source's inbounds are made on that server (a wrong name is
//! refused before anything is imported).

use axum::http::StatusCode;
use serde_json::json;
use sqlx::Connection;

use crate::common::Harness;
use crate::import_remnawave::{anna_db, cluster};
use crate::import_xui::make_source;

fn leftovers(h: &Harness) -> Vec<String> {
    std::fs::read_dir(h.db.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("import-"))
        .collect()
}

#[tokio::test]
async fn the_sources_inbounds_are_made_on_the_server_named() {
    let h = Harness::new().await;
    let token = h.token().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x-ui.db");
    make_source(&db, 21_001).await;
    let file = std::fs::read(&db).unwrap();
    let upload = |path: &str| {
        h.post(path)
            .bearer(&token)
            .bytes("application/octet-stream", file.clone())
            .send()
    };
    let inbounds = || async {
        let r = h.get("/api/v1/inbounds").bearer(&token).send().await;
        r.ok(StatusCode::OK)
    };
    // No such server: refused naming it, nothing imported.
    let r = upload("/api/v1/imports/3x-ui?server=nowhere").await;
    let p = r.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        p["detail"],
        "server: no server named \"nowhere\" here: add it first, or name one of yours"
    );
    let users = h.get("/api/v1/users").bearer(&token).send().await;
    assert_eq!(users.ok(StatusCode::OK)["total"], 0);

    crate::common::server_at(&h, &token, "fra", "203.0.113.9").await;
    let r = upload("/api/v1/imports/3x-ui?dry_run=true&server=fra").await;
    let report = r.ok(StatusCode::OK);
    let notes: Vec<(&str, &str)> = report["inbounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["tag"].as_str().unwrap(), i["note"].as_str().unwrap()))
        .collect();
    assert_eq!(
        notes,
        [
            ("inbound-21001", "would be made here on server fra"),
            (
                "inbound-21443",
                "not made here: its TLS certificate is not given as files (certificateFile, \
                 keyFile): create the inbound here with its certificate"
            ),
            (
                "inbound-21444",
                "not made here: vmess inbounds are not made here: its users get this panel's \
                 other inbounds"
            ),
        ]
    );
    assert_eq!(inbounds().await.as_array().unwrap().len(), 0);

    let r = upload("/api/v1/imports/3x-ui?server=fra").await;
    let report = r.ok(StatusCode::OK);
    let made = &inbounds().await[0];
    assert_eq!(report["inbounds"][0]["here"], made["id"]);
    // Under 3x-ui's name for it (what its users saw), on its port.
    assert_eq!(
        (&made["name"], &made["port"], &made["transport"]["type"]),
        (&json!("vless 21001"), &json!(21001), &json!("tcp"))
    );
}

#[tokio::test]
async fn an_uploaded_3x_ui_database_is_imported_and_what_is_not_one_refused() {
    let h = Harness::new().await;
    let token = h.token().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x-ui.db");
    make_source(&db, 21_001).await;
    let file = std::fs::read(&db).unwrap();
    let upload = |path: &str, body: Vec<u8>| {
        h.post(path)
            .bearer(&token)
            .bytes("application/octet-stream", body)
            .send()
    };

    let r = upload("/api/v1/imports/3x-ui?dry_run=true", file.clone()).await;
    let report = r.ok(StatusCode::OK);
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["schema"], "2.x");
    assert_eq!(
        report["added"],
        json!(["alice", "bob", "carol", "dave", "erin", "frank"])
    );
    let users = h.get("/api/v1/users").bearer(&token).send().await;
    assert_eq!(users.ok(StatusCode::OK)["total"], 0);

    let r = upload("/api/v1/imports/3x-ui", file.clone()).await;
    let report = r.ok(StatusCode::OK);
    assert_eq!(report["dry_run"], false);
    assert_eq!(report["added"].as_array().unwrap().len(), 6);
    let users = h.get("/api/v1/users").bearer(&token).send().await;
    assert_eq!(users.ok(StatusCode::OK)["total"], 6);
    let r = upload("/api/v1/imports/3x-ui?disable_missing=true", file.clone()).await;
    assert_eq!(r.ok(StatusCode::OK)["updated"].as_array().unwrap().len(), 6);

    // Not a database; a database that is not Marzban's; a source we do not know.
    let r = upload(
        "/api/v1/imports/3x-ui",
        b"SQLite format 3\0 but not really".to_vec(),
    )
    .await;
    let p = r.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .starts_with("the file is not a database this import can read"),
        "{p}"
    );
    let r = upload("/api/v1/imports/marzban", file.clone()).await;
    let p = r.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        p["detail"],
        "the file: no alembic_version table: not a Marzban database"
    );
    let r = upload("/api/v1/imports/pasarguard", file.clone()).await;
    let p = r.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        p["detail"],
        "the file: no alembic_version table: not a PasarGuard database"
    );
    let r = upload("/api/v1/imports/marzneshin?plain_keys=true", file.clone()).await;
    let p = r.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        p["detail"],
        "the file: no alembic_version or users_services table: not a Marzneshin database"
    );
    let r = upload("/api/v1/imports/hiddify", file.clone()).await;
    r.problem(StatusCode::NOT_FOUND);
    let r = upload("/api/v1/imports/3x-ui?dry_run=maybe", file.clone()).await;
    r.problem(StatusCode::BAD_REQUEST);

    // One at a time.
    let running = h.state.imports().lock().await;
    let r = upload("/api/v1/imports/3x-ui", file.clone()).await;
    r.problem(StatusCode::CONFLICT);
    drop(running);

    // A read-only token may not import.
    let r = h
        .post("/api/v1/tokens")
        .session(&h.login().await)
        .json(&json!({"name": "reader", "scope": "read"}))
        .send()
        .await;
    let reader = r.ok(StatusCode::CREATED)["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = h
        .post("/api/v1/imports/3x-ui")
        .bearer(&reader)
        .bytes("application/octet-stream", file)
        .send()
        .await;
    r.problem(StatusCode::FORBIDDEN);

    // Larger than the bound: refused once past it, and the partial file goes too.
    let bound = switchyard_panel::api::imports::MAX_UPLOAD as usize;
    let r = upload("/api/v1/imports/3x-ui", vec![0u8; bound + 1]).await;
    let p = r.problem(StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        p["detail"],
        "larger than 256 MiB: import it with `switchyard panel import`"
    );
    no_leftovers(&h).await;
}

/// The uploaded files are removed (off the request's thread: a moment later).
async fn no_leftovers(h: &Harness) {
    for _ in 0..50 {
        if leftovers(h).is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("left in the data directory: {:?}", leftovers(h));
}

#[tokio::test]
async fn a_remnawave_database_is_imported_by_its_url_and_a_bad_one_refused() {
    let h = Harness::new().await;
    let token = h.token().await;
    let pg = cluster().await;
    let (url, c) = anna_db(&pg, 21_002).await;
    let send = |path: &str, body: serde_json::Value| h.post(path).bearer(&token).json(&body).send();

    let r = send(
        "/api/v1/imports/remnawave?dry_run=true",
        json!({"database_url": url}),
    )
    .await;
    let report = r.ok(StatusCode::OK);
    assert_eq!(report["dry_run"], true);
    assert_eq!(
        report["schema"],
        "20260815170000_add_shared_lists (Remnawave 3.0–3.3)"
    );
    assert_eq!(report["added"], json!(["anna"]));
    let r = send("/api/v1/imports/remnawave", json!({"database_url": url})).await;
    assert_eq!(r.ok(StatusCode::OK)["added"], json!(["anna"]));
    let users = h.get("/api/v1/users").bearer(&token).send().await;
    assert_eq!(users.ok(StatusCode::OK)["total"], 1);

    // Not a URL of PostgreSQL; not the body asked for; too long; a wrong password
    // (named without it).
    let r = send(
        "/api/v1/imports/remnawave",
        json!({"database_url": "mysql://a@b/c"}),
    )
    .await;
    let p = r.problem(StatusCode::BAD_REQUEST);
    assert_eq!(
        p["detail"],
        "database_url: must start with postgres:// or postgresql://"
    );
    let r = send("/api/v1/imports/remnawave", json!({"url": url})).await;
    r.problem(StatusCode::BAD_REQUEST);
    let long = "x".repeat(10_000);
    let r = send("/api/v1/imports/remnawave", json!({"database_url": long})).await;
    r.problem(StatusCode::PAYLOAD_TOO_LARGE);
    let wrong = format!("postgres://nobody:s3cret-pass@127.0.0.1:{}/none", pg.port());
    let r = send("/api/v1/imports/remnawave", json!({"database_url": wrong})).await;
    let p = r.problem(StatusCode::UNPROCESSABLE_ENTITY);
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!("postgres://127.0.0.1:{}/none: ", pg.port())),
        "{p}"
    );
    assert!(!detail.contains("s3cret"), "{p}");
    c.close().await.unwrap();
}

#[tokio::test]
async fn marzban_on_mysql_is_imported_by_its_url() {
    let h = Harness::new().await;
    let token = h.token().await;
    let mysql = switchyard_testkit::mariadb::MariaDb::start("marzban").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("xray_config.json"),
        r#"{"inbounds": [{"tag": "VLESS TCP", "listen": "127.0.0.1", "port": 21001,
            "protocol": "vless", "settings": {"clients": [], "decryption": "none"}}],
            "outbounds": [{"protocol": "freedom", "tag": "DIRECT"}]}"#,
    )
    .unwrap();
    let run = |program: &str, args: &[&str]| {
        switchyard_testkit::marzban::run_on(
            dir.path(),
            &mysql.sqlalchemy_url("marzban"),
            program,
            args,
        )
    };
    run("alembic", &["upgrade", "head"]);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/import/marzban.py");
    run("python", &[script.to_str().unwrap(), "make"]);
    let send = |path: &str, body: serde_json::Value| h.post(path).bearer(&token).json(&body).send();
    let url = mysql.url("marzban");
    let r = send(
        "/api/v1/imports/marzban?dry_run=true",
        json!({"database_url": url}),
    )
    .await;
    let report = r.ok(StatusCode::OK);
    assert_eq!(
        (report["dry_run"].clone(), report["schema"].clone()),
        (json!(true), json!("2b231de97dc3"))
    );
    assert_eq!(report["added"].as_array().unwrap().len(), 6, "{report}");
    // Marzban's database is MySQL's: a PostgreSQL URL is not one.
    let r = send(
        "/api/v1/imports/marzban",
        json!({"database_url": "postgres://a@b/c"}),
    )
    .await;
    let p = r.problem(StatusCode::BAD_REQUEST);
    assert_eq!(
        p["detail"],
        "database_url: must start with mysql:// or mariadb://"
    );
}

#[tokio::test]
async fn pasarguard_and_marzneshin_on_a_database_server_are_named_by_their_url() {
    let h = Harness::new().await;
    let token = h.token().await;
    let pg = cluster().await;
    let url = pg.fresh_database("not_a_panel").unwrap();
    for (source, panel) in [("pasarguard", "PasarGuard"), ("marzneshin", "Marzneshin")] {
        let path = format!("/api/v1/imports/{source}?dry_run=true");
        let send = |body: serde_json::Value| h.post(&path).bearer(&token).json(&body).send();
        let r = send(json!({"database_url": "sqlite:///db.sqlite3"})).await;
        let p = r.problem(StatusCode::BAD_REQUEST);
        assert_eq!(
            p["detail"],
            "database_url: must start with postgres:// or postgresql:// or mysql:// or mariadb://"
        );
        let with_password = url.replacen('@', ":s3cret@", 1);
        let r = send(json!({"database_url": with_password})).await;
        let p = r.problem(StatusCode::UNPROCESSABLE_ENTITY);
        let detail = p["detail"].as_str().unwrap();
        assert!(
            detail.ends_with(&format!(": not a {panel} database")),
            "{p}"
        );
        assert!(!detail.contains("s3cret"), "{p}");
    }
}
