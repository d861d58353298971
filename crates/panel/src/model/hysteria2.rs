//! A Hysteria 2 inbound's own settings, and the rules that check them with the rest
//! of the inbound (each error names the field).
//!
//! Hysteria 2 is QUIC under TLS on the inbound's UDP port: its security is `tls`
//! (no REALITY, no plain), its transport `tcp` (it has none of its own). Its
//! Salamander password is a secret of the inbound ([`super::InboundSecrets`]): the
//! panel makes one when obfuscation is turned on without one, and reads never show
//! it. Users authenticate with a password derived from their credentials
//! (`service::hysteria2_password`), so no column holds it.

use serde::{Deserialize, Serialize};
use switchyard_config::Hysteria2Settings;
use switchyard_proto::entry::hysteria2::{MAX_HOP_INTERVAL_SECS, MIN_HOP_INTERVAL_SECS};
use utoipa::ToSchema;

use super::FieldError;
use super::inbound::{InboundSecurity, InboundTransport, Protocol};

/// The highest rate a Hysteria 2 inbound takes, Mbit/s (the node's limit).
pub const MAX_MBPS: u32 = 100_000;
/// The longest Salamander password taken, in bytes.
pub const MAX_OBFS_PASSWORD: usize = 128;

/// What a Hysteria 2 inbound has besides the inbound's common fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InboundHysteria2 {
    /// Salamander obfuscation: every UDP packet scrambled with the inbound's
    /// obfs password, so the wire shows no QUIC (clients need the password; their
    /// subscriptions carry it).
    #[serde(default)]
    pub obfs: bool,
    /// Write-only: the Salamander password to use (1 to 128 bytes, no control
    /// characters); unset, the panel keeps the one it has or makes one. Never read
    /// back: the store keeps it as a secret and these settings without it
    /// ([`Self::public`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(write_only, min_length = 1, max_length = 128)]
    pub obfs_password: Option<String>,
    /// The most the node sends one client, Mbit/s (1 to 100000); unset, the rate
    /// the client declares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 100000)]
    pub up_mbps: Option<u32>,
    /// The most the node takes from one client, Mbit/s (1 to 100000); unset, no
    /// limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 100000)]
    pub down_mbps: Option<u32>,
    /// Whether users' UDP is carried. On by default.
    #[serde(default = "yes")]
    pub udp: bool,
    /// Port hopping: more UDP ports served besides the inbound's port,
    /// `first-last`, at most 100 ports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = r"^[0-9]{1,5}-[0-9]{1,5}$")]
    pub ports: Option<String>,
    /// How often clients hop to another of the ports, in seconds (5 to 3600; only
    /// with `ports`); unset, each client's default (30 s in Hysteria's, sing-box
    /// and mihomo). Subscriptions carry it to sing-box and mihomo; share links
    /// have no parameter for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 5, maximum = 3600)]
    pub hop_interval_secs: Option<u32>,
    /// The masquerade: a web site (`https://host[:port]` or `http://…`) whose
    /// answers everyone who does not authenticate gets; unset, a bare `404`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2048)]
    pub masquerade: Option<String>,
}

fn yes() -> bool {
    true
}

impl Default for InboundHysteria2 {
    fn default() -> Self {
        Self {
            obfs: false,
            obfs_password: None,
            up_mbps: None,
            down_mbps: None,
            udp: true,
            ports: None,
            hop_interval_secs: None,
            masquerade: None,
        }
    }
}

impl InboundHysteria2 {
    /// These settings without the obfs password: what is stored and read.
    pub fn public(&self) -> Self {
        Self {
            obfs_password: None,
            ..self.clone()
        }
    }

    /// The node's settings, with the inbound's obfs password when obfuscated.
    pub fn node_settings(&self, obfs_password: Option<&str>) -> Hysteria2Settings {
        Hysteria2Settings {
            obfs_password: obfs_password
                .filter(|_| self.obfs)
                .map(|p| switchyard_config::Secret::new(p.to_owned())),
            up_mbps: self.up_mbps.map(u64::from),
            down_mbps: self.down_mbps.map(u64::from),
            udp: self.udp,
            ports: self.ports.clone(),
            masquerade: self.masquerade.clone(),
        }
    }
}

/// Checks what is Hysteria 2's in an inbound: its security and transport, and its
/// settings, which only a Hysteria 2 inbound may have.
pub fn check_hysteria2(
    protocol: Protocol,
    transport: &InboundTransport,
    security: &InboundSecurity,
    settings: Option<&InboundHysteria2>,
) -> Result<(), FieldError> {
    if protocol != Protocol::Hysteria2 {
        return match settings {
            Some(_) => Err(FieldError::new(
                "hysteria2",
                "only Hysteria 2 inbounds have these settings",
            )),
            None => Ok(()),
        };
    }
    if !matches!(security, InboundSecurity::Tls { .. }) {
        return Err(FieldError::new(
            "security",
            "Hysteria 2 runs over QUIC under TLS: security must be tls",
        ));
    }
    if *transport != InboundTransport::Tcp {
        return Err(FieldError::new(
            "transport",
            "Hysteria 2 has no transport of its own: transport must be tcp",
        ));
    }
    let Some(s) = settings else {
        return Ok(());
    };
    for (field, rate) in [
        ("hysteria2.up_mbps", s.up_mbps),
        ("hysteria2.down_mbps", s.down_mbps),
    ] {
        if rate.is_some_and(|r| !(1..=MAX_MBPS).contains(&r)) {
            return Err(FieldError::new(field, "must be 1 to 100000 Mbit/s"));
        }
    }
    if let Some(p) = &s.obfs_password {
        if !s.obfs {
            return Err(FieldError::new(
                "hysteria2.obfs_password",
                "only with obfs = true",
            ));
        }
        if p.is_empty() || p.len() > MAX_OBFS_PASSWORD || p.chars().any(char::is_control) {
            return Err(FieldError::new(
                "hysteria2.obfs_password",
                "must be 1 to 128 bytes without control characters",
            ));
        }
    }
    if s.masquerade
        .as_deref()
        .is_some_and(|url| !Hysteria2Settings::masquerade_ok(url))
    {
        return Err(FieldError::new(
            "hysteria2.masquerade",
            "a web site's URL, https://host[:port] or http://host[:port] (no user name)",
        ));
    }
    s.node_settings(None)
        .hop_ports()
        .map_err(|e| FieldError::new("hysteria2.ports", e))?;
    if let Some(secs) = s.hop_interval_secs {
        if s.ports.is_none() {
            return Err(FieldError::new(
                "hysteria2.hop_interval_secs",
                "only with ports (there is nothing to hop across)",
            ));
        }
        if !(MIN_HOP_INTERVAL_SECS..=MAX_HOP_INTERVAL_SECS).contains(&secs) {
            return Err(FieldError::new(
                "hysteria2.hop_interval_secs",
                "must be 5 to 3600 seconds (Hysteria's client refuses less than 5)",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TlsCertificate;

    fn tls() -> InboundSecurity {
        InboundSecurity::Tls {
            certificate: TlsCertificate::SelfSigned,
        }
    }

    #[test]
    fn a_hysteria2_inbound_is_tls_over_nothing() {
        let ok = InboundHysteria2 {
            obfs: true,
            obfs_password: Some("salt".into()),
            up_mbps: Some(100),
            down_mbps: Some(50),
            udp: false,
            ports: Some("20000-20099".into()),
            hop_interval_secs: Some(15),
            masquerade: Some("https://www.example.com".into()),
        };
        let tcp = InboundTransport::Tcp;
        let h = Protocol::Hysteria2;
        assert_eq!(check_hysteria2(h, &tcp, &tls(), Some(&ok)), Ok(()));
        assert_eq!(check_hysteria2(h, &tcp, &tls(), None), Ok(()));
        let field = |r: Result<(), FieldError>| r.unwrap_err().field;
        let none = InboundSecurity::None;
        assert_eq!(field(check_hysteria2(h, &tcp, &none, None)), "security");
        let ws = InboundTransport::Ws {
            path: "/".into(),
            host: None,
        };
        assert_eq!(field(check_hysteria2(h, &ws, &tls(), None)), "transport");
        let with = |f: fn(&mut InboundHysteria2)| {
            let mut s = ok.clone();
            f(&mut s);
            field(check_hysteria2(h, &tcp, &tls(), Some(&s)))
        };
        assert_eq!(with(|s| s.up_mbps = Some(0)), "hysteria2.up_mbps");
        assert_eq!(
            with(|s| s.masquerade = Some("ftp://site.test".into())),
            "hysteria2.masquerade"
        );
        assert_eq!(with(|s| s.down_mbps = Some(100_001)), "hysteria2.down_mbps");
        assert_eq!(
            with(|s| s.ports = Some("20000-20100".into())),
            "hysteria2.ports"
        );
        assert_eq!(with(|s| s.ports = Some("5-1".into())), "hysteria2.ports");
        // The hop interval: 5 s to an hour, and only with ports to hop across.
        for secs in [5, 3600] {
            let mut s = ok.clone();
            s.hop_interval_secs = Some(secs);
            assert_eq!(check_hysteria2(h, &tcp, &tls(), Some(&s)), Ok(()), "{secs}");
        }
        for secs in [0, 4, 3601] {
            let mut s = ok.clone();
            s.hop_interval_secs = Some(secs);
            assert_eq!(
                field(check_hysteria2(h, &tcp, &tls(), Some(&s))),
                "hysteria2.hop_interval_secs",
                "{secs}"
            );
        }
        assert_eq!(with(|s| s.ports = None), "hysteria2.hop_interval_secs");
        assert_eq!(
            with(|s| s.obfs_password = Some(String::new())),
            "hysteria2.obfs_password"
        );
        assert_eq!(with(|s| s.obfs = false), "hysteria2.obfs_password");
        // Another protocol has no such settings.
        assert_eq!(
            field(check_hysteria2(Protocol::Trojan, &tcp, &tls(), Some(&ok))),
            "hysteria2"
        );
    }

    #[test]
    fn the_hop_interval_is_kept_in_the_stored_json() {
        let s = InboundHysteria2 {
            ports: Some("20000-20009".into()),
            hop_interval_secs: Some(15),
            ..InboundHysteria2::default()
        };
        let text = serde_json::to_string(&s.public()).unwrap();
        assert_eq!(
            text,
            r#"{"obfs":false,"udp":true,"ports":"20000-20009","hop_interval_secs":15}"#
        );
        assert_eq!(serde_json::from_str::<InboundHysteria2>(&text).unwrap(), s);
        // Settings stored before the field existed read as no interval.
        let old: InboundHysteria2 =
            serde_json::from_str(r#"{"obfs":false,"udp":true,"ports":"20000-20009"}"#).unwrap();
        assert_eq!(old.hop_interval_secs, None);
    }

    #[test]
    fn the_obfs_password_is_never_read_back() {
        let s = InboundHysteria2 {
            obfs: true,
            obfs_password: Some("hunter2".into()),
            ..InboundHysteria2::default()
        };
        let text = serde_json::to_string(&s.public()).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert_eq!(text, r#"{"obfs":true,"udp":true}"#);
        let node = s.node_settings(Some("kept"));
        assert_eq!(
            node.obfs_password.map(|p| p.expose().to_owned()).as_deref(),
            Some("kept")
        );
        let off = InboundHysteria2::default().node_settings(Some("kept"));
        assert_eq!(off.obfs_password, None);
    }
}
