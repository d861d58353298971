//! An inbound's trusted proxies: the CDN's or reverse proxy's networks whose
//! `X-Forwarded-For` names the user's own address, so the node counts the address
//! limit and logs by the user rather than by the CDN (docs/node.md, "Behind a CDN:
//! the user's address").
//!
//! The panel takes what the node's validation takes (`switchyard_config`'s
//! `validate_trusted_proxies`): at most [`MAX_TRUSTED_PROXIES`] entries, each an
//! address or a network read by [`Cidr`], on the transports whose requests carry
//! HTTP headers only (WebSocket, HTTPUpgrade, XHTTP, gRPC). Checked here before it is
//! stored, so a list the node would refuse never reaches a node's config.

use switchyard_proto::forwarded::Cidr;

use super::FieldError;
use super::inbound::InboundTransport;

/// The most entries an inbound's `trusted_proxies` lists (the node's limit).
pub const MAX_TRUSTED_PROXIES: usize = switchyard_config::MAX_TRUSTED_PROXIES;

/// The longest entry taken, in bytes: the longest network text is 49
/// (`ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128`), so this bounds what is
/// stored without refusing one the node reads.
pub const MAX_ENTRY_LEN: usize = 64;

/// Whether `transport` carries HTTP headers, so `X-Forwarded-For` can name the user.
pub fn carries_headers(transport: &InboundTransport) -> bool {
    matches!(
        transport,
        InboundTransport::Ws { .. }
            | InboundTransport::HttpUpgrade { .. }
            | InboundTransport::Xhttp(_)
            | InboundTransport::Grpc { .. }
    )
}

/// Checks an inbound's `trusted_proxies` against its transport; the error names the
/// list (`trusted_proxies`) or the entry (`trusted_proxies[3]`).
pub fn check_trusted_proxies(
    transport: &InboundTransport,
    trusted_proxies: &[String],
) -> Result<(), FieldError> {
    if trusted_proxies.is_empty() {
        return Ok(());
    }
    if !carries_headers(transport) {
        return Err(FieldError::new(
            "trusted_proxies",
            "is for ws, httpupgrade, xhttp and grpc inbounds (their requests carry \
             X-Forwarded-For); leave it empty on this transport",
        ));
    }
    if trusted_proxies.len() > MAX_TRUSTED_PROXIES {
        return Err(FieldError::new(
            "trusted_proxies",
            format!("at most {MAX_TRUSTED_PROXIES} networks"),
        ));
    }
    for (i, net) in trusted_proxies.iter().enumerate() {
        let field = || format!("trusted_proxies[{i}]");
        if net.len() > MAX_ENTRY_LEN {
            return Err(FieldError::new(
                field(),
                format!("at most {MAX_ENTRY_LEN} characters (an address or a network)"),
            ));
        }
        net.parse::<Cidr>()
            .map_err(|e| FieldError::new(field(), e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> InboundTransport {
        InboundTransport::Ws {
            path: "/ws".into(),
            host: None,
        }
    }

    fn list(entries: &[&str]) -> Vec<String> {
        entries.iter().map(|e| (*e).to_owned()).collect()
    }

    #[test]
    fn header_transports_take_addresses_and_networks() {
        let good = list(&[
            "173.245.48.0/20",
            "127.0.0.1",
            "2400:cb00::/32",
            "::1",
            "0.0.0.0/0",
            "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128",
        ]);
        for transport in [
            ws(),
            InboundTransport::HttpUpgrade {
                path: "/up".into(),
                host: None,
            },
            InboundTransport::Grpc {
                service_name: "tun".into(),
                multi_mode: false,
            },
            InboundTransport::Xhttp(crate::model::xhttp::InboundXhttp {
                path: "/xh".into(),
                host: None,
                mode: "auto".into(),
            }),
        ] {
            assert_eq!(check_trusted_proxies(&transport, &good), Ok(()));
            assert_eq!(check_trusted_proxies(&transport, &[]), Ok(()));
        }
        // As many as the node takes, and not one more.
        let many: Vec<String> = (0..=MAX_TRUSTED_PROXIES)
            .map(|n| format!("10.0.{}.{}", n / 256, n % 256))
            .collect();
        assert_eq!(
            check_trusted_proxies(&ws(), &many[..MAX_TRUSTED_PROXIES]),
            Ok(())
        );
        assert_eq!(
            check_trusted_proxies(&ws(), &many),
            Err(FieldError::new("trusted_proxies", "at most 256 networks"))
        );
    }

    #[test]
    fn a_bad_entry_is_named_with_the_node_s_reason() {
        let err = |entries: &[&str]| check_trusted_proxies(&ws(), &list(entries)).unwrap_err();
        assert_eq!(
            err(&["10.0.0.0/8", "cloudflare"]),
            FieldError::new(
                "trusted_proxies[1]",
                "\"cloudflare\" is not an IP address (write a network as \"192.0.2.0/24\" \
                 or \"2001:db8::/32\")"
            )
        );
        assert_eq!(
            err(&["10.0.0.0/33"]),
            FieldError::new("trusted_proxies[0]", "prefix length \"33\" is not 0-32")
        );
        assert_eq!(
            err(&["::1", "2001:db8::/129"]),
            FieldError::new("trusted_proxies[1]", "prefix length \"129\" is not 0-128")
        );
        for (i, bad) in ["", "10.0.0.0/", "10.0.0.0/+8", "10.0.0.0/8/8", "[::1]"]
            .into_iter()
            .enumerate()
        {
            let mut entries = vec!["127.0.0.1"; i];
            entries.push(bad);
            assert_eq!(
                err(&entries).field,
                format!("trusted_proxies[{i}]"),
                "{bad:?}"
            );
        }
        let long = format!("{}127.0.0.1", " ".repeat(MAX_ENTRY_LEN));
        assert_eq!(
            err(&["127.0.0.1", "::1", "10.0.0.1", &long]),
            FieldError::new(
                "trusted_proxies[3]",
                "at most 64 characters (an address or a network)"
            )
        );
    }

    #[test]
    fn transports_without_headers_refuse_them() {
        let e = check_trusted_proxies(&InboundTransport::Tcp, &list(&["127.0.0.1"])).unwrap_err();
        assert_eq!(e.field, "trusted_proxies");
        assert!(
            e.message
                .starts_with("is for ws, httpupgrade, xhttp and grpc"),
            "{e}"
        );
        // Empty is the default everywhere.
        assert_eq!(check_trusted_proxies(&InboundTransport::Tcp, &[]), Ok(()));
    }
}
