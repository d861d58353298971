//! `switchyard tunnel init` leaves its secrets private even over older, wider files,
//! and writes XHTTP and gRPC profiles the node accepts.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

#[test]
fn secrets_are_0600_even_over_wider_files_from_before() {
    let dir = tempfile::tempdir().unwrap();
    let private = ["eu.key", "eu.secret", "relay.toml", "origin-fi.toml"];
    for name in private {
        let p = dir.path().join(name);
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["tunnel", "init", "--name", "eu", "--relay", "127.0.0.1"])
        .args(["--origin", "fi", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for name in private {
        let p = dir.path().join(name);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}");
        assert_ne!(std::fs::read_to_string(&p).unwrap(), "old", "{name}");
    }
}

/// XHTTP and gRPC profiles (behind a CDN's host) give snippets the node's config
/// reads and validates on both halves, with the transports as given.
#[test]
fn xhttp_and_grpc_profiles_give_configs_the_node_accepts() {
    use switchyard_node::NodeConfig;
    use switchyard_node::config::TunnelTransport;
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["tunnel", "init", "--name", "eu", "--relay", "127.0.0.1"])
        .args([
            "--origin",
            "fi",
            "--profile",
            "xhttp:8080:/eu-xh:cdn.example.org",
        ])
        .args(["--profile", "grpc:8081:eu.Tunnel", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for (file, state) in [("relay.toml", "relay"), ("origin-fi.toml", "fi")] {
        let text = format!(
            "[node]\nstate_dir = \"{}\"\n{}",
            dir.path().join(state).display(),
            std::fs::read_to_string(dir.path().join(file)).unwrap()
        );
        let config = NodeConfig::from_toml(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let transports: Vec<&TunnelTransport> = config.tunnels[0]
            .profiles
            .iter()
            .map(|p| &p.transport)
            .collect();
        assert_eq!(
            transports,
            [
                &TunnelTransport::Xhttp {
                    path: "/eu-xh".into(),
                    host: "cdn.example.org".into(),
                    mode: switchyard_proto::xhttp::Mode::Auto,
                    outer_tls: None,
                },
                &TunnelTransport::Grpc {
                    service_name: "eu.Tunnel".into(),
                    host: String::new(),
                    outer_tls: None,
                },
            ],
            "{file}"
        );
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["tunnel", "init", "--name", "eu", "--relay", "127.0.0.1"])
        .args([
            "--origin",
            "fi",
            "--profile",
            "grpc:8081:eu/Tunnel",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("--profile grpc:8081:eu/Tunnel") && stderr.contains("grpc:PORT:SERVICE"),
        "{stderr}"
    );
}
