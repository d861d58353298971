//! Which Remnawave a database is: told by the migrations Prisma recorded in
//! `_prisma_migrations` (Remnawave keeps no other version). Every name must be one of
//! Remnawave's own, else the import is refused naming it; the markers below say
//! where the tables this import reads changed shape.

/// What this import reads differently between Remnawave releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// 2.3 to 2.8: users keyed by `t_id` (and still a `uuid`), usage in `user_traffic`.
    V2 {
        /// Known devices keyed by `user_uuid` (before 2.8) rather than `user_id`.
        devices_by_uuid: bool,
    },
    /// 3.0 to 3.3: users keyed by `id`, no `uuid`.
    V3,
}

impl Layout {
    /// The releases, as the report names them.
    pub fn releases(self) -> &'static str {
        match self {
            Self::V2 { .. } => "2.3–2.8",
            Self::V3 => "3.0–3.3",
        }
    }

    /// Users' key column.
    pub(super) fn user_id(self) -> &'static str {
        match self {
            Self::V2 { .. } => "t_id",
            Self::V3 => "id",
        }
    }
}

/// Usage moved from `users` to `user_traffic` (2.3.0).
const USER_TRAFFIC: &str = "20251112020636_user_traffic";
/// Known devices keyed by the user's `id` rather than `uuid` (2.8.0).
const DEVICES_BY_ID: &str = "20260407151134_repalce_uuid_with_user_id";
/// `users.uuid` dropped, `t_id` renamed `id` (3.0.0).
const DROP_USER_UUID: &str = "20260720132335_drop_user_uuid";
/// Shipped in 2.5.0 and 2.5.1 only; Remnawave's own start-up deletes them, but a
/// database last run by those releases still lists them.
const WITHDRAWN: &[&str] = &[
    "20251230045744_drop_is_custom_remark",
    "20260107133400_es_default_remarks",
];

/// Why a list of migrations is not one this import reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A migration Remnawave 3.3.2 does not have: a newer release (or not Remnawave).
    Unknown(String),
    /// A release before 2.3 (usage still on `users`): upgrade it first.
    TooOld(String),
    /// Nothing recorded.
    Empty,
}

/// The layout of a database whose finished migrations are `applied`.
pub fn layout(applied: &[String]) -> Result<Layout, Refusal> {
    if let Some(unknown) = applied
        .iter()
        .find(|m| !MIGRATIONS.contains(&m.as_str()) && !WITHDRAWN.contains(&m.as_str()))
    {
        return Err(Refusal::Unknown(unknown.clone()));
    }
    let last = latest(applied).ok_or(Refusal::Empty)?;
    let has = |m: &str| applied.iter().any(|a| a == m);
    if has(DROP_USER_UUID) {
        Ok(Layout::V3)
    } else if has(USER_TRAFFIC) {
        Ok(Layout::V2 {
            devices_by_uuid: !has(DEVICES_BY_ID),
        })
    } else {
        Err(Refusal::TooOld(last.to_owned()))
    }
}

/// The newest of `applied` (names sort by their timestamps).
pub fn latest(applied: &[String]) -> Option<&str> {
    applied.iter().map(String::as_str).max()
}

/// Every migration of Remnawave 1.3.3 to 3.3.2, in order (`_prisma_migrations`).
pub(super) const MIGRATIONS: &[&str] = &[
    "20241129132625_init",
    "20241205203645_",
    "20241216003610_add_new_field",
    "20241222053036_add_users_online_stat",
    "20241225185207_add_node_inbound_exclusions",
    "20250113213322_add_updated_at_to_nodes_user_usage_history",
    "20250113231728_add_view_position_for_nodes",
    "20250114013223_add_country_code",
    "20250126164718_add_description_field_and_fix_default_values",
    "20250211135916_add_consumption_multiplier",
    "20250219012541_remove",
    "20250219013001_remove_depreacted_limit_strategies",
    "20250225115627_add_network_and_security_to_inbounds",
    "20250301181855_add_telegram_id_and_email_fields",
    "20250301203122_upgrade_to_v6",
    "20250302162049_new_auth_system",
    "20250307025906_add_xray_uptime",
    "20250308020443_add_subscription_templates",
    "20250311232029_add_subscription_settings",
    "20250312014652_add_boolean_value_for_webpage_url",
    "20250314164711_add_serve_json_at_base_subscription",
    "20250314191018_add_username_to_base_subscription",
    "20250315164331_add_security_layer",
    "20250321173808_add_extra_xhttp",
    "20250326125917_add_ca_certs",
    "20250403121347_add_is_show_custom_remarks",
    "20250404230114_replace_uuid_with_id_in_a_few_tables_drop_uuid_for_active_user_inbounds",
    "20250409201313_add_hwid",
    "20250410180959_add_custom_response_headers",
    "20250415192807_change_primary_key_on_hwid_user_devices",
    "20250505151503_add_user_tag",
    "20250506222812_add_index_to_nodes_user_usage_history",
    "20250506224824_add_indexes",
    "20250518181139_add_first_connected_at_and_notification_threshold",
    "20250519185746_add_randomize_hosts",
    "20250612160411_add_last_connected_node_uuid",
    "20250613022955_add_index_to_user_traffic_history",
    "20250619032009_add_squads_and_config_profiles_drop_old_tables",
    "20250619033003_add_raw_json_to_config_profile_inbounds",
    "20250620182607_add_infra_related_tables",
    "20250625141235_add_server_description_to_hosts",
    "20250626184020_change_created_at_in_nodes_user_usage_history",
    "20250706204810_add_node_version_to_nodes",
    "20250713201057_remove_api_token_description",
    "20250730131220_add_mux_to_host",
    "20250730140727_add_sockopt_params_to_host",
    "20250807224235_remove_unique_from_host",
    "20250807234256_add_tag_and_is_hidden_properties_to_host",
    "20250810143307_override_sni_from_address",
    "20250817155235_add_vless_route_id",
    "20250821172409_add_indexes",
    "20250822011918_add_tid",
    "20250913131958_add_subscription_request_history",
    "20250914181427_add_ais",
    "20250925101912_add_shuffle_host_and_mihomo_x25519",
    "20251008222202_add_hosts_to_nodes",
    "20251016013423_add_snippets",
    "20251017011159_add_response_rules",
    "20251019220002_allow_multiple_sub_templates",
    "20251020051722_add_external_squads",
    "20251021150742_add_subscription_settings_to_es",
    "20251023203325_settings_and_passkeys",
    "20251028234406_add_hosts_override_to_es",
    "20251105201518_response_headers_es",
    "20251109162118_hwid_settings",
    "20251111012403_nuu_index_drop",
    "20251111214604_refactor_user_usage_history",
    "20251112020636_user_traffic",
    "20251116151032_add_xray_json_to_host",
    "20251117153032_dnd",
    "20251118004805_node_tags",
    "20251118174347_internal_squad_host_exclusions",
    "20251120225934_es_custom_remarks",
    "20251121001611_unify_custom_remarks",
    "20251126082042_drop_add_username_to_base_subscription",
    "20251129171418_change_status",
    "20251129171707_change_pk",
    "20251129180538_stricter_host_columns",
    "20251201172156_drop_unused_columns_in_nodes",
    "20251201232425_drop_user_traffic_history",
    "20251202213233_change_uuid_to_id_in_is_memers",
    "20251207150402_blank_sni",
    "20251214002858_subpage_configs",
    "20251214163118_truncate_configs",
    "20251214213514_add_subpage_to_es",
    "20251215222247_subpage_tr",
    "20251218145003_nodes_index",
    "20260107203202_es_custom_remarks",
    "20260225000503_exclude_host_from_subtype",
    "20260225202645_node_plugins",
    "20260301142020_tg_oauth2",
    "20260305150610_user_node_metadata",
    "20260307201721_torrent_blocker_reports",
    "20260312215357_drop_unused_columns",
    "20260315172145_drop_legacy_columns",
    "20260327170528_drop_node_columns",
    "20260328174929_final_mask_in_host",
    "20260407151134_repalce_uuid_with_user_id",
    "20260601044404_remove_allow_insecure",
    "20260601143124_add_verify_peer_cert_by_name",
    "20260602181750_add_mihomo_ip_version",
    "20260604145012_add_node_note",
    "20260604160914_add_host_tags",
    "20260604221858_add_proxy_for_node",
    "20260612170542_add_node_consumption_multiplier",
    "20260614181725_add_index_to_expire_at",
    "20260620150954_add_api_tokens_scopes",
    "20260622153610_optional_billing_node",
    "20260625133614_expire_at_for_api_tokens",
    "20260625200256_drop_unused_index",
    "20260625200309_add_where_index",
    "20260625200530_add_external_squad_index",
    "20260702230159_add_user_id_index_to_hwid_devices",
    "20260703000112_drop_unused_table",
    "20260703205426_increase_host_remark_limit",
    "20260706144257_drop_default_on_api_tokens",
    "20260706192331_change_hwid_datatype",
    "20260710141018_add_nuuh_user_id_created_at_index",
    "20260714190723_add_index_to_telegram_id",
    "20260717190133_es_response_headers",
    "20260717203703_migrate_fields_to_response_headers",
    "20260720124815_rename_column",
    "20260720132335_drop_user_uuid",
    "20260726011328_index_to_users",
    "20260801175808_srr_info_in_srh",
    "20260806120000_add_node_ips",
    "20260811025420_add_host_mapper",
    "20260815012443_add_node_integrations",
    "20260815170000_add_shared_lists",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn up_to(last: &str) -> Vec<String> {
        let end = MIGRATIONS.iter().position(|m| *m == last).expect("known") + 1;
        MIGRATIONS[..end].iter().map(|m| (*m).to_owned()).collect()
    }

    #[test]
    fn each_release_line_is_told_by_its_markers() {
        // The last migrations of 3.3.2, 3.0.0, 2.8.0, 2.7.3 and 2.3.0's first marker.
        let v3 = [
            "20260815170000_add_shared_lists",
            "20260726011328_index_to_users",
        ];
        for last in v3 {
            assert_eq!(layout(&up_to(last)), Ok(Layout::V3), "{last}");
        }
        assert_eq!(
            layout(&up_to("20260625200530_add_external_squad_index")),
            Ok(Layout::V2 {
                devices_by_uuid: false
            })
        );
        for last in ["20260328174929_final_mask_in_host", USER_TRAFFIC] {
            assert_eq!(
                layout(&up_to(last)),
                Ok(Layout::V2 {
                    devices_by_uuid: true
                }),
                "{last}"
            );
        }
        assert_eq!(
            latest(&up_to("20260815170000_add_shared_lists")),
            Some("20260815170000_add_shared_lists")
        );
    }

    #[test]
    fn an_unknown_or_old_database_is_refused_naming_why() {
        let mut newer = up_to("20260815170000_add_shared_lists");
        newer.push("20260822150859_host_exclusion_modes".into());
        assert_eq!(
            layout(&newer),
            Err(Refusal::Unknown(
                "20260822150859_host_exclusion_modes".into()
            ))
        );
        // 2.2.6's last: usage still on `users`.
        assert_eq!(
            layout(&up_to("20251105201518_response_headers_es")),
            Err(Refusal::TooOld("20251105201518_response_headers_es".into()))
        );
        assert_eq!(layout(&[]), Err(Refusal::Empty));
        // 2.5.0's withdrawn migration is still Remnawave's.
        let mut withdrawn = up_to("20251218145003_nodes_index");
        withdrawn.push(WITHDRAWN[0].into());
        assert!(layout(&withdrawn).is_ok());
    }
}
