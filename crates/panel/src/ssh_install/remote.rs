//! The commands the panel runs on the server, as text, and what it reads back: pure.
//!
//! Nothing in a command comes from the operator: the paths are fixed, the hash is
//! hex, the join token is the panel's own (letters, digits, `.`, `-`, `_`), and each
//! is put in as one single-quoted shell word all the same. Every command is run as
//! `sh -c '…'` (with `sudo -n` in front for a login that is not root), so the
//! login's own shell only ever sees one quoted word.

/// Where the binary goes on the server.
pub const BIN: &str = "/usr/local/bin/switchyard";

/// `text` as one single-quoted shell word.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `script` run by `sh`, as root: through `sudo -n` when the login is not root.
pub fn as_root(script: &str, sudo: bool) -> String {
    let sh = format!("sh -c {}", quote(script));
    if sudo { format!("sudo -n {sh}") } else { sh }
}

/// What `checking` runs (as the login, not root): one `key=value` a line.
pub const CHECK: &str = "echo \"kernel=$(uname -s)\"; echo \"arch=$(uname -m)\"; \
    if [ \"$(id -u)\" = 0 ]; then echo root=yes; \
    elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then echo root=sudo; \
    else echo root=no; fi; \
    if test -d /run/systemd/system; then echo systemd=yes; else echo systemd=no; fi";

/// How the login gets root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// It is root.
    Yes,
    /// Through `sudo -n`.
    Sudo,
}

/// Why the server does not fit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SystemError {
    /// Not Linux.
    #[error("this server runs {0}, not Linux")]
    NotLinux(String),
    /// Another architecture than the panel's binary.
    #[error("this server is {server}, but the panel hands out a {panel} binary only")]
    Arch {
        /// The server's `uname -m`.
        server: String,
        /// The panel's.
        panel: String,
    },
    /// Not root, and `sudo -n` does not work.
    #[error(
        "the login is not root and cannot use sudo without a password: log in as root or \
         allow it `sudo` (NOPASSWD)"
    )]
    NoRoot,
    /// No systemd as PID 1.
    #[error(
        "this server does not run systemd (no /run/systemd/system): install the node by hand \
         (docs/install.md, \"Without systemd\")"
    )]
    NoSystemd,
    /// The answer did not read.
    #[error("the system check printed something unexpected")]
    Unreadable,
}

/// Reads what [`CHECK`] printed, for a panel handing out an `arch` binary.
pub fn read_check(output: &str, arch: &str) -> Result<Root, SystemError> {
    let get = |key: &str| {
        output
            .lines()
            .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
    };
    let (Some(kernel), Some(server_arch), Some(root), Some(systemd)) =
        (get("kernel"), get("arch"), get("root"), get("systemd"))
    else {
        return Err(SystemError::Unreadable);
    };
    if kernel != "Linux" {
        return Err(SystemError::NotLinux(kernel.chars().take(64).collect()));
    }
    if server_arch != arch {
        return Err(SystemError::Arch {
            server: server_arch.chars().take(64).collect(),
            panel: arch.to_owned(),
        });
    }
    let root = match root {
        "yes" => Root::Yes,
        "sudo" => Root::Sudo,
        _ => return Err(SystemError::NoRoot),
    };
    if systemd != "yes" {
        return Err(SystemError::NoSystemd);
    }
    Ok(root)
}

/// What `uploading` runs, its standard input the binary: into a temporary file
/// beside [`BIN`], its sha256 checked there against `sha256_hex`, then renamed over
/// [`BIN`] (a node still running the old binary keeps it until it restarts).
pub fn upload(sha256_hex: &str) -> String {
    let hash = quote(sha256_hex);
    let bin = quote(BIN);
    format!(
        "set -eu\n\
         umask 022\n\
         mkdir -p /usr/local/bin\n\
         t=$(mktemp /usr/local/bin/.switchyard-upload.XXXXXX)\n\
         trap 'rm -f \"$t\"' EXIT\n\
         cat > \"$t\"\n\
         got=$(sha256sum \"$t\" | cut -d ' ' -f 1)\n\
         if [ \"$got\" != {hash} ]; then\n\
         \x20 echo \"refused: the upload's sha256 is $got but the panel's binary is \"{hash}\"; nothing was installed\" >&2\n\
         \x20 exit 1\n\
         fi\n\
         echo \"sha256 \"{hash}\" matches the panel's binary\"\n\
         chmod 0755 \"$t\"\n\
         mv -f \"$t\" {bin}\n\
         trap - EXIT\n\
         echo \"installed \"{bin}\n"
    )
}

/// What `installing` runs: `switchyard node install TOKEN`.
pub fn install(token: &str) -> String {
    format!("{} node install {}", quote(BIN), quote(token))
}

/// Where the firewall's rules are kept on the server.
pub const FIREWALL_FILE: &str = "/etc/switchyard/firewall.nft";

/// What `firewall` runs: writes `rules` (an `nft -f` file) to [`FIREWALL_FILE`],
/// checks and applies it, has `/etc/nftables.conf` include it (so nftables.service
/// loads it at boot) and enables that service; last, lists the table.
pub fn firewall(rules: &str) -> String {
    let file = quote(FIREWALL_FILE);
    let include = quote(&format!("include \"{FIREWALL_FILE}\""));
    format!(
        "set -eu\n\
         if ! command -v nft >/dev/null 2>&1; then\n\
         \x20 echo 'nft is not installed on this server (Debian: apt install nftables): no firewall was set up' >&2\n\
         \x20 exit 3\n\
         fi\n\
         mkdir -p /etc/switchyard\n\
         printf '%s' {rules} > {file}.new\n\
         nft -c -f {file}.new\n\
         mv -f {file}.new {file}\n\
         nft -f {file}\n\
         echo \"applied \"{file}\n\
         if [ ! -e /etc/nftables.conf ]; then printf '#!/usr/sbin/nft -f\\n' > /etc/nftables.conf; fi\n\
         if ! grep -qxF {include} /etc/nftables.conf; then\n\
         \x20 echo {include} >> /etc/nftables.conf\n\
         \x20 echo 'added the include to /etc/nftables.conf'\n\
         fi\n\
         systemctl enable nftables.service 2>&1\n\
         nft list table inet switchyard\n",
        rules = quote(rules),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_one_word() {
        assert_eq!(quote("a'b"), r"'a'\''b'");
        assert_eq!(as_root("id -u", false), "sh -c 'id -u'");
        assert_eq!(as_root("echo 'x'", true), r"sudo -n sh -c 'echo '\''x'\'''");
    }

    #[test]
    fn the_check_reads_root_sudo_and_refusals() {
        let out = |root: &str, systemd: &str, arch: &str| {
            format!("kernel=Linux\narch={arch}\nroot={root}\nsystemd={systemd}\n")
        };
        assert_eq!(
            read_check(&out("yes", "yes", "x86_64"), "x86_64"),
            Ok(Root::Yes)
        );
        assert_eq!(
            read_check(&out("sudo", "yes", "x86_64"), "x86_64"),
            Ok(Root::Sudo)
        );
        assert_eq!(
            read_check(&out("no", "yes", "x86_64"), "x86_64"),
            Err(SystemError::NoRoot)
        );
        assert_eq!(
            read_check(&out("yes", "no", "x86_64"), "x86_64"),
            Err(SystemError::NoSystemd)
        );
        assert!(matches!(
            read_check(&out("yes", "yes", "aarch64"), "x86_64"),
            Err(SystemError::Arch { .. })
        ));
        assert_eq!(
            read_check("kernel=FreeBSD\narch=x\nroot=yes\nsystemd=no", "x"),
            Err(SystemError::NotLinux("FreeBSD".into()))
        );
        assert_eq!(read_check("garbage", "x"), Err(SystemError::Unreadable));
    }

    #[test]
    fn the_upload_checks_the_hash_before_it_moves_anything() {
        let s = upload("ab12");
        let check = s.find("sha256sum").unwrap();
        let mv = s.find("mv -f").unwrap();
        assert!(check < mv, "{s}");
        assert!(s.contains("[ \"$got\" != 'ab12' ]"), "{s}");
        assert!(
            s.contains("mv -f \"$t\" '/usr/local/bin/switchyard'"),
            "{s}"
        );
    }

    #[test]
    fn the_token_is_one_quoted_word() {
        assert_eq!(
            install("syj2.ab.c-d_e"),
            "'/usr/local/bin/switchyard' node install 'syj2.ab.c-d_e'"
        );
    }

    #[test]
    fn the_firewall_says_when_nft_is_missing() {
        let s = firewall("table inet switchyard {}\n");
        assert!(s.contains("nft is not installed on this server"), "{s}");
        assert!(
            s.contains("printf '%s' 'table inet switchyard {}\n'"),
            "{s}"
        );
        assert!(s.contains("systemctl enable nftables.service"));
    }
}
