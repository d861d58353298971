//! How a tunnel profile's links are carried (`docs/tunnel.md`): straight on TCP, or
//! inside HTTP (WebSocket, HTTPUpgrade, XHTTP, gRPC) through a reverse proxy or a CDN,
//! with the CDN's TLS in front for the dialing side. The tunnel's own pinned TLS runs
//! inside every one of them. Pure: the checks name the field (`profiles[1].transport.path`).

use serde::{Deserialize, Serialize};
use switchyard_proto::xhttp::Mode;
use utoipa::ToSchema;

use crate::model::inbound::is_grpc_service_name;
use crate::model::{FieldError, check_host};

/// How a profile's links are carried.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum LinkTransport {
    /// Straight on TCP.
    #[default]
    Tcp,
    /// A WebSocket upgrade on `path` (through an HTTP reverse proxy or a CDN), the
    /// secured link inside.
    Ws {
        /// The request path, starting with `/`.
        path: String,
        /// The `Host` the dialing side sends; empty: the address's host.
        #[serde(default)]
        host: String,
        /// TLS to the CDN in front of the listening side, spoken first by the dialing
        /// side; the CDN ends it and passes the upgrade on in plain HTTP.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outer_tls: Option<OuterTls>,
    },
    /// An HTTP/1.1 upgrade on `path` answered `101`, then the bytes as they are
    /// (HTTPUpgrade: for a CDN that passes upgrades but not WebSocket), the secured
    /// link inside.
    #[serde(rename = "httpupgrade")]
    HttpUpgrade {
        /// The request path, starting with `/`.
        path: String,
        /// The `Host` the dialing side sends; empty: the address's host.
        #[serde(default)]
        host: String,
        /// TLS to the CDN in front of the listening side (as for `ws`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outer_tls: Option<OuterTls>,
    },
    /// XHTTP under `path`: the link's bytes in ordinary HTTP requests (a download and
    /// uploads, or one request each way on HTTP/2), for a CDN that passes no upgrade
    /// at all; the secured link inside.
    Xhttp {
        /// The path the requests go under: starts with `/`, at most 256 characters,
        /// no spaces, no query (`?`) and no `#`.
        #[schema(max_length = 256, pattern = r"^/[^?#\s\x00-\x1f\x7f-\x9f]*$")]
        path: String,
        /// The `Host` the dialing side sends; empty: the address's host.
        #[serde(default)]
        host: String,
        /// How the upload travels: `auto` (the default: stream-up when the CDN's TLS
        /// agrees on HTTP/2, packet-up otherwise), `packet-up`, `stream-up` or
        /// `stream-one`.
        #[serde(default = "auto")]
        #[schema(pattern = r"^(auto|packet-up|stream-up|stream-one)$")]
        mode: String,
        /// TLS to the CDN in front of the listening side (as for `ws`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outer_tls: Option<OuterTls>,
    },
    /// gRPC ("gun") on `/{service_name}/Tun`: each link a gRPC stream on HTTP/2
    /// (cleartext to the listening side, the CDN's TLS in front), the secured link
    /// inside.
    Grpc {
        /// The gRPC service name: 1 to 128 letters, digits, `_`, `.` and `-`.
        #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]{1,128}$")]
        service_name: String,
        /// The `:authority` the dialing side sends; empty: the address's host.
        #[serde(default)]
        host: String,
        /// TLS to the CDN in front of the listening side (as for `ws`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outer_tls: Option<OuterTls>,
    },
}

fn auto() -> String {
    Mode::Auto.name().to_owned()
}

impl LinkTransport {
    /// The CDN's TLS of a transport over HTTP, if it has one.
    pub fn outer_tls(&self) -> Option<&OuterTls> {
        match self {
            Self::Tcp => None,
            Self::Ws { outer_tls, .. }
            | Self::HttpUpgrade { outer_tls, .. }
            | Self::Xhttp { outer_tls, .. }
            | Self::Grpc { outer_tls, .. } => outer_tls.as_ref(),
        }
    }
}

/// TLS to a CDN or reverse proxy in front of a profile's listening side: checked
/// against the web's roots (and `ca_pem`, for a proxy with a private CA) for
/// `server_name`. The tunnel's own pinned TLS runs inside, so the CDN never holds the
/// link's key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OuterTls {
    /// The CDN's name: the SNI sent and the name its certificate carries.
    #[schema(example = "cdn.example.com")]
    pub server_name: String,
    /// A root trusted besides the web's, PEM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_pem: Option<String>,
}

/// Checks a profile's transport; `field` is the profile's (`profiles[1]`), the error
/// names the transport's field under it (`profiles[1].transport.path`).
pub(super) fn check_transport(field: &str, t: &LinkTransport) -> Result<(), FieldError> {
    let at = |name: &str| format!("{field}.transport.{name}");
    let host = match t {
        LinkTransport::Tcp => return Ok(()),
        LinkTransport::Ws { path, host, .. } | LinkTransport::HttpUpgrade { path, host, .. } => {
            check_path(&at("path"), path)?;
            host
        }
        LinkTransport::Xhttp {
            path, host, mode, ..
        } => {
            check_path(&at("path"), path)?;
            // XHTTP puts its session and padding in the path and the query.
            if path.contains(['?', '#']) {
                return Err(FieldError::new(
                    at("path"),
                    "an XHTTP path has no query (?) and no #",
                ));
            }
            if mode.is_empty() || Mode::parse(mode).is_none() {
                return Err(FieldError::new(
                    at("mode"),
                    "must be auto, packet-up, stream-up or stream-one",
                ));
            }
            host
        }
        LinkTransport::Grpc {
            service_name, host, ..
        } => {
            if !is_grpc_service_name(service_name) {
                return Err(FieldError::new(
                    at("service_name"),
                    "must be 1 to 128 letters, digits, _, . and -",
                ));
            }
            host
        }
    };
    if !host.is_empty() {
        check_host(&at("host"), host)?;
    }
    if let Some(outer) = t.outer_tls() {
        check_host(&at("outer_tls.server_name"), &outer.server_name)?;
        if outer
            .ca_pem
            .as_deref()
            .is_some_and(|pem| !pem.contains("-----BEGIN CERTIFICATE-----") || pem.len() > 65536)
        {
            return Err(FieldError::new(
                at("outer_tls.ca_pem"),
                "a PEM certificate (-----BEGIN CERTIFICATE-----), at most 64 KiB",
            ));
        }
    }
    Ok(())
}

/// A request path: starts with `/`, at most 256 characters, no spaces.
fn check_path(field: &str, path: &str) -> Result<(), FieldError> {
    if !path.starts_with('/')
        || path.len() > 256
        || path.chars().any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(FieldError::new(
            field,
            "must start with / and be at most 256 characters, without spaces",
        ));
    }
    Ok(())
}
