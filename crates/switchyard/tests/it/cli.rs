//! The `switchyard auto` commands, run as the built binary.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn switchyard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/auto")
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("switchyard-cli-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

const VALID: &str = r#"{"until": 120, "subscriptions": [{"name": "Main", "servers": ["fi", "de"]},
  {"name": "Backup", "servers": ["us"]}], "auto": "Main",
  "world": [{"server": "*", "ms": 70}], "traffic": [{}]}"#;

#[test]
fn a_valid_scenario_prints_json_lines_ending_with_the_summary() {
    let path = temp_file("valid.json", VALID);
    let out = switchyard(&["auto", "simulate", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = stdout.lines().last().unwrap();
    assert!(
        last.starts_with(r#"{"event":"summary","policy":"auto","#),
        "{last}"
    );
    for line in stdout.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("each line is JSON");
    }
    let again = switchyard(&["auto", "simulate", path.to_str().unwrap()]);
    assert_eq!(
        stdout.as_bytes(),
        again.stdout,
        "byte-identical across runs"
    );
}

#[test]
fn a_bad_scenario_exits_2_naming_the_file_and_field() {
    let bad = VALID.replace(r#""ms": 70"#, r#""ms": 70, "from": 90, "to": 30"#);
    let path = temp_file("bad.json", &bad);
    let out = switchyard(&["auto", "simulate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.json"), "{stderr}");
    assert!(
        stderr.contains("world[0]: from (90) must be before to (30)"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    let missing = switchyard(&["auto", "simulate", "/nonexistent/x.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/x.json"));

    let garbage = temp_file("garbage.json", "{\"until\": ");
    let out = switchyard(&["auto", "compare", garbage.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("garbage.json"));
}

#[test]
fn every_example_parses_and_runs_with_auto() {
    let mut count = 0;
    for entry in fs::read_dir(examples()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        count += 1;
        let out = switchyard(&[
            "auto",
            "simulate",
            path.to_str().unwrap(),
            "--policy",
            "auto",
        ]);
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            stdout
                .lines()
                .last()
                .unwrap()
                .contains(r#""event":"summary""#)
        );
    }
    assert!(count >= 8, "the examples are there");
}

#[test]
fn compare_prints_a_table_per_scenario() {
    let dir = examples();
    let out = switchyard(&["auto", "compare", "--markdown", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("### cascade\n"),
        "sorted by name: {stdout}"
    );
    assert!(stdout.contains("| policy | switches | outage_s | probes | checks |"));
    assert!(stdout.contains("\n| auto | "));

    let plain = switchyard(&[
        "auto",
        "compare",
        dir.join("elevator.json").to_str().unwrap(),
    ]);
    let text = String::from_utf8(plain.stdout).unwrap();
    assert!(text.starts_with("elevator\n  policy"), "{text}");
}
