//! A C program (`tests/c/drive.c`) drives the engine through the committed header and
//! the static library, as an app would.
//!
//! The test builds nothing with cargo: building this test built the library with all
//! its crate types, so `libswitchyard_auto_ffi.a` sits beside the test binary in the
//! profile's `deps` directory (for `cargo test` and `cargo nextest run` alike). It needs
//! a C compiler, `$CC` or `cc`, and fails without one rather than skip.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// Link flags for Rust's standard library inside a static library, as
/// `rustc --print native-static-libs` lists them on Linux (libc and libgcc come with
/// the compiler driver).
const SYSTEM_LIBS: [&str; 3] = ["-lpthread", "-ldl", "-lm"];

/// The static library built with this test.
fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's directory");
    let candidates = [
        deps.join("libswitchyard_auto_ffi.a"),
        deps.join("../libswitchyard_auto_ffi.a"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "libswitchyard_auto_ffi.a is not beside the test binary (looked for {candidates:?}); \
                 the crate's `crate-type` must include \"staticlib\""
            )
        })
}

/// Runs `cmd` with its output in `log`, killing it after `limit`.
fn run(mut cmd: Command, log: &Path, limit: Duration) -> (ExitStatus, String) {
    let what = format!("{cmd:?}");
    let out = File::create(log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    let err = out.try_clone().expect("a second handle on the log");
    let mut child = cmd.stdout(out).stderr(err).spawn().unwrap_or_else(|e| {
        panic!(
            "cannot run {what}: {e}. The C ABI test needs a C compiler: install one \
                 (`apt-get install gcc`) or name it in $CC"
        )
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not finish within {limit:?}; output so far:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, std::fs::read_to_string(log).unwrap_or_default())
}

#[test]
fn a_c_program_drives_the_engine_through_its_abi() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("auto-ffi-c");
    std::fs::create_dir_all(&work).unwrap_or_else(|e| panic!("{}: {e}", work.display()));
    let exe = work.join("drive");

    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let mut compile = Command::new(&cc);
    compile
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("tests/c/drive.c"))
        .arg(static_lib())
        .args(SYSTEM_LIBS)
        .arg("-o")
        .arg(&exe);
    let (status, log) = run(compile, &work.join("cc.log"), Duration::from_secs(120));
    assert!(status.success(), "{cc} failed ({status}):\n{log}");

    let (status, log) = run(
        Command::new(&exe),
        &work.join("drive.log"),
        Duration::from_secs(30),
    );
    println!("{log}");
    assert!(status.success(), "drive.c failed ({status}):\n{log}");
    assert!(log.contains("drive.c: all checks passed"), "{log}");
}
