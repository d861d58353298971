//! What the operator sends to install a node over SSH, and its validation: every
//! field is hostile until read (an address, a login name, a key of bounded size
//! whose key derivation is bounded too, a fingerprint), and every error names its
//! field. The credentials live in [`Credentials`], whose `Debug` shows no secret and
//! whose memory is wiped when it is dropped.

use std::fmt;
use std::sync::Arc;

use russh::keys::ssh_key::{Kdf, PrivateKey};
use serde::Deserialize;
use utoipa::ToSchema;
use zeroize::{Zeroize, Zeroizing};

use crate::model::FieldError;

/// The largest private key read, in bytes (a 16384-bit RSA key in OpenSSH form is
/// about 12 KiB).
pub const MAX_KEY_BYTES: usize = 16 * 1024;
/// The longest password or passphrase, in bytes.
pub const MAX_PASSWORD_BYTES: usize = 1024;
/// The longest login name (Linux allows 32; some systems more).
pub const MAX_USER_BYTES: usize = 64;
/// The most bcrypt rounds an encrypted key may ask for: `ssh-keygen` uses 16 (`-a`
/// 100 is a common hardening); each round costs about 6 ms, so a key asking for
/// millions would hold a thread for hours. 256 rounds take about 1.5 s.
pub const MAX_KDF_ROUNDS: u32 = 256;
/// The SSH port when the address names none.
pub const DEFAULT_PORT: u16 = 22;

/// An install over SSH, as the operator sends it. Its `Debug` shows no secret.
#[derive(Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SshInstallInput {
    /// The server's SSH address: `host`, `host:port`, `[v6]:port` (port 22 when
    /// none is given).
    #[schema(min_length = 1, max_length = 261)]
    pub address: String,
    /// The login: `root`, or a user who may `sudo` without a password.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\$?$"
    )]
    pub user: String,
    /// The password, used once for this job and never stored. Either it or
    /// `private_key`.
    #[serde(default)]
    #[schema(max_length = 1024, format = Password)]
    pub password: Option<String>,
    /// A private key in OpenSSH form (`-----BEGIN OPENSSH PRIVATE KEY-----`), used
    /// once for this job and never stored.
    #[serde(default)]
    #[schema(max_length = 16384, format = Password)]
    pub private_key: Option<String>,
    /// The private key's passphrase, when it has one.
    #[serde(default)]
    #[schema(max_length = 1024, format = Password)]
    pub passphrase: Option<String>,
    /// The host key's fingerprint the operator confirmed (`SHA256:…` as the first
    /// answer showed it). Without it, and without a pinned one, the job only reads
    /// the host key and waits for this confirmation.
    #[serde(default)]
    #[schema(pattern = r"^SHA256:[A-Za-z0-9+/]{43}$")]
    pub host_key: Option<String>,
    /// Also install the nftables firewall (only SSH, the inbounds' and the tunnels'
    /// ports open).
    #[serde(default)]
    pub firewall: bool,
}

impl fmt::Debug for SshInstallInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |s: &Option<String>| s.as_ref().map(|_| "<redacted>");
        f.debug_struct("SshInstallInput")
            .field("address", &self.address)
            .field("user", &self.user)
            .field("password", &shown(&self.password))
            .field("private_key", &shown(&self.private_key))
            .field("passphrase", &shown(&self.passphrase))
            .field("host_key", &self.host_key)
            .field("firewall", &self.firewall)
            .finish()
    }
}

impl Drop for SshInstallInput {
    fn drop(&mut self) {
        for secret in [
            &mut self.password,
            &mut self.private_key,
            &mut self.passphrase,
        ] {
            if let Some(s) = secret.as_mut() {
                s.zeroize();
            }
        }
    }
}

/// Why an address does not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddressError {
    /// Nothing given.
    #[error("is empty")]
    Empty,
    /// The host is not a DNS name or an IP address.
    #[error("{0:?} is not a host name or an IP address")]
    Host(String),
    /// The port is not a number from 1 to 65535.
    #[error("port {0:?} is not a number from 1 to 65535")]
    Port(String),
}

/// Why a request was refused: each names its field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// `address` does not read.
    #[error("address: {0}")]
    Address(AddressError),
    /// `user` is empty, too long or has a character a login name cannot have.
    #[error("user: {0}")]
    User(&'static str),
    /// `password` is empty or too long, or comes with a key.
    #[error("password: {0}")]
    Password(&'static str),
    /// `private_key` does not read.
    #[error("private_key: {0}")]
    PrivateKey(String),
    /// `passphrase` is wrong, missing, too long or comes without a key.
    #[error("passphrase: {0}")]
    Passphrase(&'static str),
    /// `host_key` is not a SHA256 fingerprint, or differs from the pinned one.
    #[error("host_key: {0}")]
    HostKey(String),
}

impl InputError {
    /// The field at fault, as the API names it.
    pub fn field(&self) -> &'static str {
        match self {
            Self::Address(_) => "address",
            Self::User(_) => "user",
            Self::Password(_) => "password",
            Self::PrivateKey(_) => "private_key",
            Self::Passphrase(_) => "passphrase",
            Self::HostKey(_) => "host_key",
        }
    }

    /// As a [`FieldError`], for the API's problem answers.
    pub fn to_field_error(&self) -> FieldError {
        let text = self.to_string();
        let message = text
            .split_once(": ")
            .map_or(text.as_str(), |(_, m)| m)
            .to_owned();
        FieldError::new(self.field(), message)
    }
}

/// Where to connect: a host and a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// A DNS name or an IP address (without brackets).
    pub host: String,
    /// The SSH port.
    pub port: u16,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Reads `host`, `host:port`, `[v6]:port` or a bare IPv6 address.
pub fn parse_address(text: &str) -> Result<Target, InputError> {
    let err = |e| InputError::Address(e);
    let text = text.trim();
    if text.is_empty() {
        return Err(err(AddressError::Empty));
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| err(AddressError::Host(text.to_owned())))?;
        match after {
            "" => (host, None),
            p => (
                host,
                Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| err(AddressError::Port(p.to_owned())))?,
                ),
            ),
        }
    } else if text.matches(':').count() > 1 {
        (text, None) // a bare IPv6 address
    } else {
        match text.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        }
    };
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|n| *n != 0 && p.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| err(AddressError::Port(p.to_owned())))?,
    };
    let is_ip = host.parse::<std::net::IpAddr>().is_ok();
    if !is_ip && !is_dns_name(host) {
        return Err(err(AddressError::Host(host.to_owned())));
    }
    Ok(Target {
        host: host.to_owned(),
        port,
    })
}

/// Letters, digits and `-` in labels of 1 to 63, dots between, 253 at most.
fn is_dns_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// A login name: letters, digits, `_`, `.`, `-` (not first), an optional final `$`.
pub fn check_user(user: &str) -> Result<(), InputError> {
    if user.is_empty() {
        return Err(InputError::User("is empty"));
    }
    if user.len() > MAX_USER_BYTES {
        return Err(InputError::User("is longer than 64 bytes"));
    }
    let body = user.strip_suffix('$').unwrap_or(user);
    let ok = !body.is_empty()
        && !body.starts_with('-')
        && !body.starts_with('.')
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if !ok {
        return Err(InputError::User(
            "may hold letters, digits, `_`, `.` and `-` (not first) only",
        ));
    }
    Ok(())
}

/// Reads a confirmed fingerprint: `SHA256:` and 43 characters of unpadded base64.
pub fn check_host_key(text: &str) -> Result<String, InputError> {
    let ok = text.strip_prefix("SHA256:").is_some_and(|b64| {
        b64.len() == 43
            && b64
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
    });
    if !ok {
        return Err(InputError::HostKey(
            "is not an SSH SHA256 fingerprint (`SHA256:` and 43 characters of base64, as \
             `ssh-keygen -lf` prints it)"
                .into(),
        ));
    }
    Ok(text.to_owned())
}

/// How the panel logs in: held by the job only until it is connected.
pub enum Credentials {
    /// A password.
    Password(Zeroizing<String>),
    /// A private key (its memory is wiped when dropped).
    Key(Arc<PrivateKey>),
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Password(_) => f.write_str("Password(<redacted>)"),
            Self::Key(k) => write!(f, "Key({}, <redacted>)", k.algorithm()),
        }
    }
}

/// A checked request.
#[derive(Debug)]
pub struct Request {
    /// Where.
    pub target: Target,
    /// As whom.
    pub user: String,
    /// How (none: the request only reads the host key).
    pub credentials: Option<Credentials>,
    /// The fingerprint the operator confirmed, if any.
    pub host_key: Option<String>,
    /// Whether to install the firewall.
    pub firewall: bool,
}

/// Checks every field of `input`; decrypting a key takes time (bounded by
/// [`MAX_KDF_ROUNDS`]): call it off the async workers.
pub fn check(input: &SshInstallInput) -> Result<Request, InputError> {
    let target = parse_address(&input.address)?;
    check_user(&input.user)?;
    let host_key = input.host_key.as_deref().map(check_host_key).transpose()?;
    let credentials = match (&input.password, &input.private_key) {
        (Some(_), Some(_)) => {
            return Err(InputError::Password(
                "give a password or a private_key, not both",
            ));
        }
        (Some(p), None) => {
            if input.passphrase.is_some() {
                return Err(InputError::Passphrase("goes with a private_key only"));
            }
            if p.is_empty() {
                return Err(InputError::Password("is empty"));
            }
            if p.len() > MAX_PASSWORD_BYTES || p.contains('\0') {
                return Err(InputError::Password(
                    "is longer than 1024 bytes or holds a NUL",
                ));
            }
            Some(Credentials::Password(Zeroizing::new(p.clone())))
        }
        (None, Some(k)) => Some(Credentials::Key(Arc::new(read_key(
            k,
            input.passphrase.as_deref(),
        )?))),
        (None, None) => {
            if input.passphrase.is_some() {
                return Err(InputError::Passphrase("goes with a private_key only"));
            }
            None
        }
    };
    if credentials.is_none() && host_key.is_some() {
        return Err(InputError::Password(
            "a password or a private_key is needed to install",
        ));
    }
    Ok(Request {
        target,
        user: input.user.clone(),
        credentials,
        host_key,
        firewall: input.firewall,
    })
}

/// An OpenSSH private key, decrypted with `passphrase` when it is encrypted.
fn read_key(text: &str, passphrase: Option<&str>) -> Result<PrivateKey, InputError> {
    if text.len() > MAX_KEY_BYTES {
        return Err(InputError::PrivateKey("is larger than 16 KiB".into()));
    }
    if passphrase.is_some_and(|p| p.len() > MAX_PASSWORD_BYTES) {
        return Err(InputError::Passphrase("is longer than 1024 bytes"));
    }
    let key = PrivateKey::from_openssh(text.trim().as_bytes()).map_err(|e| {
        InputError::PrivateKey(format!(
            "is not an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY-----; convert \
             another form with `ssh-keygen -p -f FILE`): {e}"
        ))
    })?;
    if !key.is_encrypted() {
        return Ok(key);
    }
    let Some(passphrase) = passphrase else {
        return Err(InputError::Passphrase(
            "the private key is encrypted: give its passphrase",
        ));
    };
    if let Kdf::Bcrypt { rounds, .. } = key.kdf()
        && *rounds > MAX_KDF_ROUNDS
    {
        return Err(InputError::PrivateKey(format!(
            "asks for {rounds} bcrypt rounds, more than the {MAX_KDF_ROUNDS} read here"
        )));
    }
    key.decrypt(passphrase.as_bytes())
        .map_err(|_| InputError::Passphrase("does not decrypt the private key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test keys made with `ssh-keygen -t ed25519` for these tests only: plain, with
    /// the passphrase "pass phrase", and with 2000 bcrypt rounds (`-a 2000`).
    const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACCGNs5EUbJC8pCJTk2lLO5jrUvRDUFaN1kjjox6bKTfVAAAAIiB4w+FgeMP\nhQAAAAtzc2gtZWQyNTUxOQAAACCGNs5EUbJC8pCJTk2lLO5jrUvRDUFaN1kjjox6bKTfVA\nAAAECoQBs9YEjq4ZqRmCm1vjltEkBK80/UHcVW/RoX+NKT4oY2zkRRskLykIlOTaUs7mOt\nS9ENQVo3WSOOjHpspN9UAAAABHRlc3QB\n-----END OPENSSH PRIVATE KEY-----";
    const KEY_LOCKED: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABCrW/gqw+\nXBXM/Su0e9LuCDAAAAEAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIMWS5iSwrsuKEZuf\nFeTtShJPHIdlgrQuUzEyVhTFL7hfAAAAkBXw8dd+kJz71kBFXY6vsclL+iXU8glq6Lwvix\nUPG5NeHESg0ibyTsXtxbNjWX5wZdXNJnLK7hGOQHAK2oD/RtKOmmD91r+c9A7Rkou8lL0w\nlBCTHxe6FPaBC9iQ6LHqpcoby83xrveNA9owBLGXzZz/cIM5kzQtHRaafiEr64KypNerIf\nFr2DBYVWDW2ZUHmw==\n-----END OPENSSH PRIVATE KEY-----";
    const KEY_SLOW: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABACVumosO\nSzKmJzJewgHxo3AAAH0AAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIOQUvNoekk+nBqhx\nTA5GFF8WRl13fUftsMqFKHBeilqOAAAAkCTSC+ft6d/6Gq9Fe36y5rRUrGoso2GP0qmADv\npaDo8xRylydcpTWQSp2IZzC4UR3vjzN7bXWJd1fEm6yIzzfyFA+GtL40mtsvLkF0WStggU\nPeuA9ykSArGyXdDIvJWVGfRWOy+umI/ivvRIYyr924fLA0hX2e+X/lPz1DWiRMUVbF3Au4\n4W6+0J8HyFyA5c4g==\n-----END OPENSSH PRIVATE KEY-----";

    fn input() -> SshInstallInput {
        let mut i = SshInstallInput::default();
        i.address = "203.0.113.7".into();
        i.user = "root".into();
        i.password = Some("hunter2".into());
        i
    }

    /// [`input`] changed by `f`.
    fn with(f: impl FnOnce(&mut SshInstallInput)) -> SshInstallInput {
        let mut i = input();
        f(&mut i);
        i
    }

    fn keyed(pem: &str, pass: Option<&str>) -> SshInstallInput {
        with(|i| {
            i.password = None;
            i.private_key = Some(pem.to_owned());
            i.passphrase = pass.map(str::to_owned);
        })
    }

    #[test]
    fn addresses_read_with_and_without_a_port() {
        let t = |s: &str| parse_address(s).map(|t| t.to_string());
        assert_eq!(t("203.0.113.7").unwrap(), "203.0.113.7:22");
        assert_eq!(t(" vps.example.com:2222 ").unwrap(), "vps.example.com:2222");
        assert_eq!(t("[2001:db8::1]:2200").unwrap(), "[2001:db8::1]:2200");
        assert_eq!(t("2001:db8::1").unwrap(), "[2001:db8::1]:22");
        assert_eq!(t("[::1]").unwrap(), "[::1]:22");
        for bad in [
            "",
            "host:0",
            "host:65536",
            "host:+22",
            "host:",
            "a b",
            "-x.example",
            "x;rm -rf /",
            "$(id)",
            "[::1]x",
            "[::1",
            "h\n:22",
        ] {
            let e = parse_address(bad).unwrap_err();
            assert_eq!(e.field(), "address", "{bad:?}: {e}");
        }
    }

    #[test]
    fn login_names_are_plain() {
        for ok in ["root", "deploy-1", "a.b_c", "svc$"] {
            check_user(ok).unwrap();
        }
        for bad in ["", "-x", ".x", "a b", "x;id", "é", "$", &"a".repeat(65)] {
            assert_eq!(check_user(bad).unwrap_err().field(), "user", "{bad:?}");
        }
    }

    #[test]
    fn host_keys_are_sha256_fingerprints() {
        let good = format!("SHA256:{}", "A".repeat(43));
        assert_eq!(check_host_key(&good).unwrap(), good);
        for bad in [
            "MD5:aa",
            "SHA256:",
            &format!("SHA256:{}=", "A".repeat(42)),
            &format!("SHA256:{}", "A".repeat(44)),
        ] {
            assert_eq!(check_host_key(bad).unwrap_err().field(), "host_key");
        }
    }

    #[test]
    fn credentials_one_kind_at_a_time() {
        let r = check(&input()).unwrap();
        assert!(matches!(r.credentials, Some(Credentials::Password(_))));
        assert_eq!(r.target.port, 22);
        let field = |i: SshInstallInput| check(&i).unwrap_err().field();
        assert_eq!(
            field(with(|i| i.private_key = Some(KEY.into()))),
            "password"
        );
        assert_eq!(
            field(with(|i| i.passphrase = Some("x".into()))),
            "passphrase"
        );
        assert_eq!(
            field(with(|i| i.password = Some(String::new()))),
            "password"
        );
        let confirmed_without = with(|i| {
            i.password = None;
            i.host_key = Some(format!("SHA256:{}", "A".repeat(43)));
        });
        assert_eq!(field(confirmed_without), "password");
        let probe = with(|i| i.password = None);
        assert!(check(&probe).unwrap().credentials.is_none());
    }

    #[test]
    fn keys_are_bounded_and_must_read() {
        let e = check(&keyed(&"A".repeat(MAX_KEY_BYTES + 1), None)).unwrap_err();
        assert_eq!(e.field(), "private_key");
        assert!(e.to_string().contains("16 KiB"), "{e}");
        let junk = keyed("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n", None);
        assert_eq!(check(&junk).unwrap_err().field(), "private_key");
        let slow = check(&keyed(KEY_SLOW, Some("x"))).unwrap_err();
        assert_eq!(slow.field(), "private_key");
        assert!(slow.to_string().contains("2000 bcrypt rounds"), "{slow}");
    }

    #[test]
    fn a_key_reads_and_its_passphrase_is_checked() {
        let r = check(&keyed(KEY, None)).unwrap();
        assert!(matches!(r.credentials, Some(Credentials::Key(_))));
        assert_eq!(
            check(&keyed(KEY_LOCKED, None)).unwrap_err().field(),
            "passphrase"
        );
        assert_eq!(
            check(&keyed(KEY_LOCKED, Some("wrong")))
                .unwrap_err()
                .field(),
            "passphrase"
        );
        assert!(check(&keyed(KEY_LOCKED, Some("pass phrase"))).is_ok());
    }

    #[test]
    fn debug_shows_no_secret() {
        let i = with(|i| {
            i.passphrase = Some("pp-secret".into());
            i.private_key = Some("KEY-SECRET".into());
        });
        let shown = format!("{i:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("SECRET"),
            "{shown}"
        );
        let r = check(&input()).unwrap();
        assert!(!format!("{r:?}").contains("hunter2"));
    }
}
