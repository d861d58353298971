//! The outbounds' section and the routing: tags, the built-ins, and every rule's
//! outbound (and the final one) existing.

use std::collections::HashSet;

use super::{ConfigError, invalid, tag_ok};
use crate::{NodeConfig, OutboundKind};

impl NodeConfig {
    pub(super) fn validate_outbounds(&self) -> Result<(), ConfigError> {
        let mut tags = HashSet::new();
        for (i, o) in self.outbounds.iter().enumerate() {
            let field = format!("outbounds[{i}].tag");
            if !tag_ok(&o.tag) {
                return Err(invalid(field, "use 1-64 letters, digits, '-' or '_'"));
            }
            if !tags.insert(o.tag.as_str()) {
                return Err(invalid(
                    field,
                    format!("{:?} is used by another outbound", o.tag),
                ));
            }
            let builtin = match o.tag.as_str() {
                "direct" => Some(OutboundKind::Direct),
                "block" => Some(OutboundKind::Block),
                _ => None,
            };
            if builtin.is_some_and(|b| b != o.kind) {
                return Err(invalid(
                    field,
                    format!("{:?} is a built-in outbound of another type", o.tag),
                ));
            }
        }
        for (i, rule) in self.route.rules.iter().enumerate() {
            if rule.is_catch_all() {
                return Err(invalid(
                    format!("route.rules[{i}]"),
                    "has no condition; set route.final for what no rule matches",
                ));
            }
            if self.via(&rule.outbound).is_none() {
                return Err(invalid(
                    format!("route.rules[{i}].outbound"),
                    format!("no outbound is tagged {:?}", rule.outbound),
                ));
            }
            for (j, tag) in rule.inbound.iter().enumerate() {
                if !self.inbounds.iter().any(|ib| &ib.tag == tag) {
                    return Err(invalid(
                        format!("route.rules[{i}].inbound[{j}]"),
                        format!("no inbound is tagged {tag:?}"),
                    ));
                }
            }
        }
        if self.via(&self.final_tag()).is_none() {
            return Err(invalid(
                "route.final",
                format!("no outbound is tagged {:?}", self.final_tag()),
            ));
        }
        Ok(())
    }
}
