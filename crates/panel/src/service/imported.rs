//! Inbounds brought from another panel: checked as any inbound is, and made with the
//! source's REALITY private key (so its users' configs, which carry the public key
//! and a short id, keep working) instead of a new pair.

use super::{Service, ServiceError, with_hysteria2_defaults, with_short_id};
use crate::model::{FieldError, Inbound, InboundSecurity};
use crate::store::InboundInput;

impl Service {
    /// Checks `input` as [`Service::create_inbound`] does and, unless `dry_run`,
    /// creates it; a REALITY inbound gets the key pair of `reality_private_key` (the
    /// source's), its short ids as given. `None` on a dry run.
    pub async fn create_imported_inbound(
        &self,
        input: &InboundInput,
        reality_private_key: Option<&str>,
        dry_run: bool,
        now_ms: i64,
    ) -> Result<Option<Inbound>, ServiceError> {
        Self::validate_inbound(input)?;
        self.check_inbound_dest(input).await?;
        self.check_rule_tunnels(input).await?;
        let reality = matches!(input.security, InboundSecurity::Reality { .. });
        let public_key = match (reality, reality_private_key) {
            (false, _) => None,
            (true, None) => {
                return Err(FieldError::new("security.private_key", "missing").into());
            }
            (true, Some(k)) => {
                Some(switchyard_config::reality::public_key_of(k).ok_or_else(|| {
                    FieldError::new("security.private_key", "not an X25519 key in Xray's form")
                })?)
            }
        };
        if dry_run {
            return Ok(None);
        }
        let input = with_hysteria2_defaults(with_short_id(input, None));
        let mut secrets = self.secrets_for(&input).await?;
        if let Some(public_key) = public_key {
            secrets.reality_private_key = reality_private_key.map(str::to_owned);
            secrets.reality_public_key = Some(public_key);
        }
        Ok(Some(
            self.store.create_inbound(&input, &secrets, now_ms).await?,
        ))
    }
}
