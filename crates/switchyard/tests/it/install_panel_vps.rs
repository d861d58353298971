//! `switchyard panel install` on a fresh server (a Debian root booted with
//! systemd-nspawn in the client side of a namespace pair): the binary as an operator
//! downloaded it, one command, and the panel runs as a systemd service, answers on the
//! server's address and hands out its install script; run again it keeps the config
//! and the data; `panel uninstall` keeps the data unless told to delete it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use switchyard_testkit::netns;
use switchyard_testkit::vps::Vps;

use crate::install_vps::get;
use crate::vps_panel::second_build;

fn assert_lines(said: &str, lines: &[&str]) {
    for line in lines {
        assert!(said.contains(line), "{line:?} in\n{said}");
    }
}

/// `GET /healthz` on a new connection: `200 ok`, or what went wrong.
async fn healthz(at: SocketAddr) -> Result<(), String> {
    let mut s = tokio::net::TcpStream::connect(at)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n")
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .await
        .map_err(|e| format!("read: {e}"))?;
    let text = String::from_utf8_lossy(&raw);
    if text.starts_with("HTTP/1.1 200 OK") && text.ends_with("ok\n") {
        Ok(())
    } else {
        Err(format!("answer: {text:?}"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panel_install_runs_the_panel_as_a_service_and_uninstall_keeps_its_data() {
    let pair = netns::pair().unwrap();
    let servers = pair.servers.runtime_in().unwrap();
    let vps = Vps::boot(&pair.client).unwrap();
    let downloaded = vps.root().join("root/switchyard");
    std::fs::copy(env!("CARGO_BIN_EXE_switchyard"), &downloaded).unwrap();
    let public = format!("http://{}:2053", netns::CLIENT_ADDR);

    let said = vps
        .sh_ok(&format!(
            "/root/switchyard panel install --listen 0.0.0.0:2053 --public-url {public}"
        ))
        .unwrap_or_else(|e| panic!("panel install: {e:#}\n{}", vps.log_tail()));
    assert_lines(
        &said,
        &[
            "switchyard: wrote /etc/switchyard/panel.toml",
            "switchyard: installed /usr/local/bin/switchyard (from /root/switchyard)",
            "switchyard: created the system user switchyard",
            "switchyard: wrote /etc/systemd/system/switchyard-panel.service",
            "switchyard: enabled and started switchyard-panel.service",
            &format!("switchyard: the panel runs at {public} (node channel on 0.0.0.0:2054)"),
            "switchyard: first admin: admin / ",
        ],
    );
    let password = std::fs::read_to_string(
        vps.root()
            .join("var/lib/switchyard/panel")
            .join(switchyard_panel::run::PASSWORD_FILE),
    )
    .unwrap();
    assert!(
        said.contains(&format!("first admin: admin / {}", password.trim())),
        "{said}"
    );
    vps.sh_ok("systemd-analyze verify /etc/systemd/system/switchyard-panel.service")
        .unwrap();
    let running = vps
        .sh_ok("systemctl show -p User -p ActiveState --value switchyard-panel")
        .unwrap();
    assert_eq!(
        running.split_whitespace().collect::<Vec<_>>(),
        ["switchyard", "active"]
    );

    // It answers on the server's address, and hands out nodes for that address.
    let at = SocketAddr::from((netns::CLIENT_ADDR, 2053));
    assert_eq!(
        get(&servers, at, "/healthz").await,
        ("HTTP/1.1 200 OK".into(), "ok\n".into())
    );
    let (status, script) = get(&servers, at, "/install.sh").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        script.contains(&format!("\nPANEL='{public}'\n")),
        "{script}"
    );

    // Again: the config and the data stay.
    let said = vps.sh_ok("/root/switchyard panel install").unwrap();
    assert_lines(
        &said,
        &[
            "switchyard: kept /etc/switchyard/panel.toml",
            "switchyard: the system user switchyard is there",
            "switchyard: /etc/systemd/system/switchyard-panel.service is up to date",
            "switchyard: enabled and started switchyard-panel.service",
        ],
    );

    // An upgrade to a second build (this one with bytes appended) under a stream of
    // requests, each on a new connection: every one is answered.
    second_build(&vps, env!("CARGO_BIN_EXE_switchyard"));
    let old_pid = vps
        .sh_ok("systemctl show -p MainPID --value switchyard-panel")
        .unwrap();
    let old_pid = old_pid.trim().to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let stop = stop.clone();
        servers.spawn(async move {
            let (mut ok, mut failed) = (0u32, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                match healthz(at).await {
                    Ok(()) => ok += 1,
                    Err(e) => failed.push(e),
                }
            }
            (ok, failed)
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let said = vps
        .sh_ok("switchyard panel upgrade --binary /root/switchyard-next")
        .unwrap_or_else(|e| panic!("panel upgrade: {e:#}\n{}", vps.log_tail()));
    let new_pid = vps
        .sh_ok("systemctl show -p MainPID --value switchyard-panel")
        .unwrap();
    let new_pid = new_pid.trim().to_owned();
    assert_ne!(new_pid, old_pid, "systemd follows the new process");
    assert_lines(
        &said,
        &[
            "switchyard: installed /usr/local/bin/switchyard (switchyard ",
            &format!("switchyard: asking the panel (process {old_pid}) to hand over"),
            &format!("switchyard: process {new_pid} serves now; process {old_pid} finishes"),
        ],
    );
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    let (ok, failed) = hammer.await.unwrap();
    assert!(ok > 20, "{ok} requests answered");
    assert!(
        failed.is_empty(),
        "{} of {} failed: {failed:?}",
        failed.len(),
        ok as usize + failed.len()
    );
    let same = vps
        .sh_ok(&format!(
            "sha256sum /proc/{new_pid}/exe /root/switchyard-next | cut -d' ' -f1 | uniq | wc -l"
        ))
        .unwrap();
    assert_eq!(same.trim(), "1", "the new process runs the second build");
    let ended = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        !vps.sh(&format!("test -d /proc/{old_pid}"))
            .unwrap()
            .status
            .success()
    });
    assert!(ended, "the old process ended");
    assert_eq!(
        vps.sh_ok("systemctl is-active switchyard-panel")
            .unwrap()
            .trim(),
        "active"
    );

    let said = vps.sh_ok("switchyard panel uninstall").unwrap();
    assert_lines(
        &said,
        &[
            "switchyard: stopped and disabled switchyard-panel.service",
            "switchyard: kept the data in /var/lib/switchyard/panel and /etc/switchyard/panel.toml",
            "switchyard: removed the system user switchyard",
            "switchyard: removed /usr/local/bin/switchyard",
        ],
    );
    assert!(
        vps.root()
            .join("var/lib/switchyard/panel/panel.db")
            .exists()
    );
    assert!(
        !vps.root()
            .join("etc/systemd/system/switchyard-panel.service")
            .exists()
    );
    let said = vps
        .sh_ok("/root/switchyard panel uninstall --delete-data")
        .unwrap();
    assert_lines(
        &said,
        &[
            "switchyard: deleted /var/lib/switchyard/panel",
            "switchyard: deleted /etc/switchyard/panel.toml",
        ],
    );
    assert!(!vps.root().join("var/lib/switchyard").exists());
    assert!(!vps.root().join("etc/switchyard").exists());
    drop(vps);
}
