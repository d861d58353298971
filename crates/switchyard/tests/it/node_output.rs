//! What `switchyard node --config FILE` prints, as an operator sees it: an invalid
//! config's error once, naming the field; logs without ANSI escape codes when stdout is
//! not a terminal (a file, a pipe, journald), and on a terminal only without
//! `NO_COLOR`; with `--log-format json`, one JSON object per line.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A node config with one inbound whose `listen` and `port` values are given (the
/// `listen` value starts at line 13, column 10), then `extra` lines.
fn config(control: u16, listen: &str, port: &str, extra: &str) -> String {
    format!(
        "version = 1\n\
         \n\
         [node]\n\
         handshake_timeout_s = 10\n\
         \n\
         [control]\n\
         listen = \"127.0.0.1:{control}\"\n\
         \n\
         [[inbounds]]\n\
         tag = \"main\"\n\
         protocol = \"vless\"\n\
         # where it listens\n\
         listen = {listen}\n\
         port = {port}\n\
         {extra}\
         [[users]]\n\
         name = \"alice\"\n\
         vless = \"b831381d-6324-4d53-ad4f-8cda48b30811\"\n"
    )
}

fn run_node(file: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["node", "--config"])
        .arg(file)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

#[test]
fn a_bad_config_is_reported_once_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("node.toml");
    let cases = [
        (
            config(9, "\"localhost\"", "443", ""),
            "inbounds[0].listen: invalid IP address syntax (line 13, column 10)",
        ),
        (
            config(9, "\"127.0.0.1\"", "70000", ""),
            "inbounds[0].port: invalid value: integer `70000`, expected u16 (line 14, column 8)",
        ),
        (
            config(9, "\"127.0.0.1\"", "443", "colour = \"blue\"\n"),
            "inbounds[0].colour: unknown field `colour`, expected one of `tag`, `name`, \
             `protocol`, `listen`, `port`, `transport`, `security`, `fallback`, `flow`, \
             `method`, `password`, `hysteria2`, `trusted_proxies` (line 15, column 1)",
        ),
        (
            config(9, "\"127.0.0.1\"", "443", "")
                .replace("handshake_timeout_s = 10", "handshake_timeout_s = \"ten\""),
            "node.handshake_timeout_s: invalid type: a string, expected u64 (line 4, column 23)",
        ),
    ];
    for (text, message) in cases {
        std::fs::write(&file, &text).unwrap();
        let out = run_node(&file);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            stderr,
            format!("error: {}: {message}\n", file.display()),
            "{text}"
        );
        assert_eq!(stderr.matches(message).count(), 1, "{stderr}");
    }
}

/// Spawns the node with stdout to a pipe and returns once it logged that its control
/// API is up (within 20 s), with everything it printed so far.
fn first_logs(mut command: Command) -> (Child, Vec<u8>) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout);
        let mut seen = Vec::new();
        loop {
            let mut line = Vec::new();
            match lines.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            seen.extend_from_slice(&line);
            if String::from_utf8_lossy(&line).contains("control API on") {
                let _ = tx.send(seen);
                return;
            }
        }
        let _ = tx.send(seen);
    });
    let seen = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
    (child, seen)
}

fn stop(mut child: Child) -> Vec<u8> {
    let _ = child.kill();
    let _ = child.wait();
    let mut stderr = Vec::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_end(&mut stderr);
    }
    stderr
}

/// `switchyard node ARGS --config FILE` (a good config in `dir`), without `RUST_LOG`
/// and `NO_COLOR`.
fn node_in(dir: &Path, args: &[&str]) -> Command {
    let file = dir.join("node.toml");
    std::fs::write(
        &file,
        config(free_port(), "\"127.0.0.1\"", &free_port().to_string(), ""),
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    command
        .arg("node")
        .args(args)
        .arg("--config")
        .arg(&file)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG");
    command
}

#[test]
fn logs_to_a_pipe_carry_no_ansi_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (child, out) = first_logs(node_in(dir.path(), &[]));
    let err = stop(child);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("control API on"), "{text}");
    assert!(text.contains(" INFO "), "{text}");
    assert!(!out.contains(&0x1b), "an escape code in: {text:?}");
    assert!(!err.contains(&0x1b), "an escape code in stderr");
}

#[test]
fn json_logs_are_one_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let (child, out) = first_logs(node_in(dir.path(), &["--log-format", "json"]));
    stop(child);
    let text = String::from_utf8_lossy(&out);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let api = lines
        .iter()
        .find(|l| {
            l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("control API on"))
        })
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(api["level"], "INFO", "{api}");
    assert!(api["timestamp"].is_string(), "{api}");
    assert!(api["target"].is_string(), "{api}");
    assert!(!out.contains(&0x1b), "an escape code in: {text:?}");
}

/// Under systemd (`NOTIFY_SOCKET`), the node says `READY=1` once it serves and
/// `STOPPING=1` when a SIGTERM begins its stop.
#[test]
fn systemd_hears_ready_then_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify");
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut command = node_in(dir.path(), &[]);
    command.env("NOTIFY_SOCKET", &socket_path);
    let (child, out) = first_logs(command);
    let mut buf = [0u8; 256];
    let n = socket.recv(&mut buf).expect("READY=1 within 20 s");
    assert_eq!(&buf[..n], b"READY=1", "{}", String::from_utf8_lossy(&out));
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let n = socket.recv(&mut buf).expect("STOPPING=1 within 20 s");
    assert_eq!(&buf[..n], b"STOPPING=1");
    stop(child);
}

/// On a terminal (a pseudo-terminal made by `script`) the logs are coloured, unless
/// `NO_COLOR` is set.
#[test]
fn logs_on_a_terminal_are_coloured_unless_no_color() {
    for (no_color, coloured) in [(None, true), (Some("1"), false)] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("node.toml");
        std::fs::write(
            &file,
            config(free_port(), "\"127.0.0.1\"", &free_port().to_string(), ""),
        )
        .unwrap();
        // Killing `script` leaves the node running (a hangup reloads it): `timeout`
        // ends it.
        let inner = format!(
            "timeout --foreground 20 {} node --config {}",
            env!("CARGO_BIN_EXE_switchyard"),
            file.display()
        );
        let mut command = Command::new("script");
        command
            .args(["-q", "-e", "-c", &inner, "/dev/null"])
            .env_remove("RUST_LOG")
            .env_remove("NO_COLOR");
        if let Some(v) = no_color {
            command.env("NO_COLOR", v);
        }
        let (child, out) = first_logs(command);
        stop(child);
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("control API on"), "{text}");
        assert_eq!(
            out.contains(&0x1b),
            coloured,
            "NO_COLOR={no_color:?}: {text:?}"
        );
    }
}
