//! What an import did, for the CLI's text, the API and `--json`: counts, what was
//! mapped to what, and everything that could not be carried, with why.

use std::fmt;
use std::path::Path;

use serde::Serialize;

use super::ImportError;
use super::inbound_plan::XrayInbound;
use super::marzban::Source;
use crate::store::ImportWritten;

/// Something of the source that was not carried (or not whole), and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct NotCarried {
    /// What (`user alice`, `admin owner`, `inbound VLESS TCP`...).
    pub what: String,
    /// Why, and what was done instead.
    pub reason: String,
}

/// An admin of the source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct AdminSeen {
    /// Login name.
    pub name: String,
    /// Marzban's sudo.
    pub sudo: bool,
    /// How many of the imported users they own.
    pub users: usize,
    /// Their role here, once carried (or the role of the admin here by their name);
    /// none when not carried.
    pub here: Option<crate::model::Role>,
}

/// A node of the source, for the operator to join here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct NodeSeen {
    /// Its name.
    pub name: String,
    /// Its address.
    pub address: String,
    /// Marzban's service port.
    pub port: i64,
}

/// An inbound of the source's Xray config.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct InboundSeen {
    /// Its tag (how users' proxies name it).
    pub tag: String,
    /// `vless`, `trojan`...
    pub protocol: String,
    /// Its port.
    pub port: u64,
    /// `tcp`, `ws`, `grpc`...
    pub network: String,
    /// `none`, `tls`, `reality`.
    pub security: String,
    /// Whether a Switchyard node can serve it as it is.
    pub served: bool,
    /// What to do about it, or what was done.
    pub note: String,
    /// The inbound here that serves it: made from it by the import (`--server`) or
    /// one of the same name already here.
    pub here: Option<crate::model::Id>,
    /// The source's whole inbound, to make it here (holds its REALITY private key:
    /// never serialized).
    #[serde(skip)]
    pub(super) xray: Option<super::inbound_plan::XrayInbound>,
}

/// An import's report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Report {
    /// `marzban`.
    pub source: &'static str,
    /// The source's schema version.
    pub schema: String,
    /// Nothing was kept.
    pub dry_run: bool,
    /// Users read from the source.
    pub users_read: usize,
    /// Users planned for writing (read minus those not carried at all).
    pub users_planned: usize,
    /// Added, by the source's name.
    pub added: Vec<String>,
    /// Updated (an earlier import brought them).
    pub updated: Vec<String>,
    /// Disabled (an earlier import brought them; the source no longer has them).
    pub disabled: Vec<String>,
    /// Left out or carried in part.
    pub not_carried: Vec<NotCarried>,
    /// The source's admins.
    pub admins: Vec<AdminSeen>,
    /// The source's nodes.
    pub nodes: Vec<NodeSeen>,
    /// The source's inbounds (with `--xray-config`).
    pub inbounds: Vec<InboundSeen>,
    /// The source's VLESS users use XTLS Vision (Marzban and its forks keep the flow
    /// with the user): inbounds made here give it where it applies.
    #[serde(skip)]
    pub(super) vision: bool,
}

impl Report {
    /// An empty report.
    pub fn new(source: &'static str, schema: &str, dry_run: bool) -> Self {
        Self {
            source,
            schema: schema.to_owned(),
            dry_run,
            users_read: 0,
            users_planned: 0,
            added: Vec::new(),
            updated: Vec::new(),
            disabled: Vec::new(),
            not_carried: Vec::new(),
            admins: Vec::new(),
            nodes: Vec::new(),
            inbounds: Vec::new(),
            vision: false,
        }
    }

    /// Lists the source's admins and nodes.
    pub fn describe(&mut self, source: &Source) {
        let owners: Vec<Option<&str>> = source.users.iter().map(|u| u.admin.as_deref()).collect();
        self.list(&owners, &source.admins, &source.nodes);
        self.vision = source.users.iter().any(|u| {
            u.proxies
                .iter()
                .any(|(kind, settings)| kind == "VLESS" && is_vision(settings))
        });
    }

    /// Lists a Marzban-like source's admins (with how many of `owners` are theirs)
    /// and nodes, and counts its users (one owner each).
    pub(super) fn list(
        &mut self,
        owners: &[Option<&str>],
        admins: &[super::source_admin::SourceAdmin],
        nodes: &[(String, String, i64, i64)],
    ) {
        self.users_read = owners.len();
        for a in admins {
            let users = owners
                .iter()
                .filter(|o| **o == Some(a.name.as_str()))
                .count();
            self.admins.push(AdminSeen {
                name: a.name.clone(),
                sudo: a.sudo,
                users,
                here: None,
            });
        }
        for (name, address, port, _) in nodes {
            self.nodes.push(NodeSeen {
                name: name.clone(),
                address: address.clone(),
                port: *port,
            });
        }
    }

    /// The source's admin `name`, who owns `users` users: listed, not carried.
    pub(super) fn admin(&mut self, name: &str, sudo: bool, users: usize) {
        self.admins.push(AdminSeen {
            name: name.to_owned(),
            sudo,
            users,
            here: None,
        });
        self.not_carried.push(NotCarried {
            what: format!("admin {name}"),
            reason: "admins are not carried: this panel has one admin for now; \
                     log in with its own password"
                .into(),
        });
    }

    /// Notes that `what` was not carried (or not whole), and why.
    pub(super) fn not_carried(&mut self, what: String, reason: String) {
        self.not_carried.push(NotCarried { what, reason });
    }

    /// Takes in what the store wrote.
    pub fn written(&mut self, planned: usize, w: ImportWritten) {
        self.users_planned = planned;
        self.added = w.added;
        self.updated = w.updated;
        self.disabled = w.disabled;
        for (name, reason) in w.conflicts {
            self.not_carried.push(NotCarried {
                what: format!("user {name}"),
                reason,
            });
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.dry_run { "would be " } else { "" };
        writeln!(
            f,
            "{} (schema {}){}: {} users read",
            self.source,
            self.schema,
            if self.dry_run {
                ", dry run: nothing kept"
            } else {
                ""
            },
            self.users_read
        )?;
        writeln!(
            f,
            "users {verb}added: {}, {verb}updated: {}, {verb}disabled: {}",
            self.added.len(),
            self.updated.len(),
            self.disabled.len()
        )?;
        for a in &self.admins {
            if let Some(role) = a.here {
                writeln!(
                    f,
                    "admin {} ({} users): {role} here",
                    a.name,
                    a.users,
                    role = role.as_str()
                )?;
            }
        }
        for n in &self.nodes {
            writeln!(
                f,
                "node {} at {}:{}: join it here (`switchyard node join`)",
                n.name, n.address, n.port
            )?;
        }
        for i in &self.inbounds {
            writeln!(
                f,
                "inbound {:?}: {} over {} ({}), port {}: {}",
                i.tag, i.protocol, i.network, i.security, i.port, i.note
            )?;
        }
        if !self.not_carried.is_empty() {
            writeln!(f, "not carried ({}):", self.not_carried.len())?;
            for n in &self.not_carried {
                writeln!(f, "- {}: {}", n.what, n.reason)?;
            }
        }
        Ok(())
    }
}

/// Whether a user's VLESS settings (`{"id", "flow"}`) give XTLS Vision.
pub(super) fn is_vision(settings: &serde_json::Value) -> bool {
    settings.get("flow").and_then(|f| f.as_str()) == Some(crate::model::Flow::Vision.as_str())
}

/// The inbounds of a Marzban `xray_config.json`, with whether a node here serves each.
pub(super) fn inbounds(path: &Path) -> Result<Vec<InboundSeen>, ImportError> {
    let bad = |message: String| ImportError::XrayConfig {
        path: path.to_owned(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if meta.len() > 4 * 1024 * 1024 {
        return Err(bad("larger than 4 MiB".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| bad(format!("line {}, column {}: {e}", e.line(), e.column())))?;
    inbounds_in(&value).map_err(bad)
}

/// The inbounds of an Xray config; what is wrong with it, naming the place.
pub(super) fn inbounds_in(value: &serde_json::Value) -> Result<Vec<InboundSeen>, String> {
    let list = value
        .get("inbounds")
        .and_then(|v| v.as_array())
        .ok_or_else(|| "no \"inbounds\" list".to_owned())?;
    let mut out = Vec::new();
    for (i, inbound) in list.iter().enumerate() {
        let text =
            |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).unwrap_or("").to_owned();
        let tag = text(inbound.get("tag"));
        if tag.is_empty() {
            return Err(format!("inbounds[{i}].tag: missing"));
        }
        let port = inbound.get("port").and_then(|p| p.as_u64()).unwrap_or(0);
        let mut seen = inbound_seen(
            tag,
            text(inbound.get("protocol")),
            port,
            inbound.get("streamSettings"),
        );
        seen.xray = Some(XrayInbound(inbound.clone()));
        out.push(seen);
    }
    Ok(out)
}

/// One source inbound (an Xray inbound: protocol, port, stream settings) with
/// whether a node here serves it.
pub(super) fn inbound_seen(
    tag: String,
    protocol: String,
    port: u64,
    stream: Option<&serde_json::Value>,
) -> InboundSeen {
    let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).unwrap_or("").to_owned();
    let network = match text(stream.and_then(|s| s.get("network"))) {
        n if n.is_empty() => "tcp".to_owned(),
        n => n,
    };
    let security = match text(stream.and_then(|s| s.get("security"))) {
        s if s.is_empty() => "none".to_owned(),
        s => s,
    };
    let served_protocol = matches!(protocol.as_str(), "vless" | "trojan");
    let served_network = matches!(
        network.as_str(),
        "tcp" | "raw" | "ws" | "grpc" | "httpupgrade" | "xhttp" | "splithttp"
    );
    let served_security = matches!(security.as_str(), "none" | "tls" | "reality");
    let served = served_protocol && served_network && served_security;
    let note = if served {
        format!(
            "served here: add a {protocol} inbound on port {port} with the same \
             transport and security to a server, and users' old configs keep working"
        )
    } else if !served_protocol {
        format!("{protocol} is not served here: users get this panel's other inbounds")
    } else if !served_network {
        format!("the {network} transport is not served here")
    } else {
        format!("{security} security is not served here")
    };
    InboundSeen {
        tag,
        protocol,
        port,
        network,
        security,
        served,
        note,
        here: None,
        xray: None,
    }
}
