//! Making the source's inbounds here (`--server NAME`): each one a node here can
//! serve, with its port, transport, security and REALITY keys, on the named server;
//! one whose name an inbound here already has is mapped to it, not made twice (so a
//! second import makes nothing new). What cannot be made is said with the reason.

use super::ImportError;
use super::inbound_plan::plan;
use super::report::{NotCarried, Report};
use crate::model::Server;
use crate::service::{Service, ServiceError};
use crate::store::Store;

/// The server here named `name` (checked before an import that makes inbounds on it,
/// so a wrong name imports nothing).
pub async fn server_named(store: &dyn Store, name: &str) -> Result<Server, ImportError> {
    store
        .servers(None)
        .await?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| ImportError::NoServer(name.to_owned()))
}

/// Makes (or, on the report's dry run, checks) the inbounds of `report` that the
/// source described whole on the server named `server`; each inbound's note says
/// what was done and [`super::InboundSeen::here`] names the inbound here.
pub async fn make_inbounds(
    service: &Service,
    report: &mut Report,
    server: &str,
    now_ms: i64,
) -> Result<(), ImportError> {
    let store = service.store();
    let on = server_named(store.as_ref(), server).await?;
    if report.inbounds.iter().all(|i| i.xray.is_none()) {
        report.not_carried.push(NotCarried {
            what: "inbounds".into(),
            reason: format!(
                "none to make on server {server}: the source described none whole \
                 (Marzban: give its xray_config.json; Marzneshin keeps only what its \
                 nodes reported)"
            ),
        });
        return Ok(());
    }
    let mut existing = store.inbounds(None, None).await?;
    // Names a dry run would make: a second source inbound of one of them is mapped
    // to it, as on a real run (where the first is in `existing` by then).
    let mut would_make: Vec<String> = Vec::new();
    let dry_run = report.dry_run;
    let vision = report.vision;
    let mut not_made = Vec::new();
    for seen in &mut report.inbounds {
        let Some(xray) = &seen.xray else { continue };
        let planned = match plan(xray, on.id, vision) {
            Ok(p) => p,
            Err(reason) => {
                seen.note = format!("not made here: {reason}");
                not_made.push((seen.tag.clone(), reason));
                continue;
            }
        };
        if let Some(same) = existing.iter().find(|i| i.name == planned.input.name) {
            seen.here = Some(same.id);
            seen.note = format!(
                "mapped to inbound {} here (the same name), port {}",
                same.id, same.port
            );
            continue;
        }
        if would_make.contains(&planned.input.name) {
            seen.note = "would be mapped to the inbound of the same name made above".into();
            continue;
        }
        let key = planned.reality_private_key.as_deref();
        match service
            .create_imported_inbound(&planned.input, key, dry_run, now_ms)
            .await
        {
            Ok(Some(made)) => {
                seen.here = Some(made.id);
                seen.note = format!("made here as inbound {} on server {server}", made.id);
                existing.push(made);
            }
            Ok(None) => {
                seen.note = format!("would be made here on server {server}");
                would_make.push(planned.input.name);
            }
            Err(ServiceError::Store(e)) if !matches!(e, crate::store::StoreError::Conflict(_)) => {
                return Err(e.into());
            }
            Err(e) => {
                let reason = e.to_string();
                seen.note = format!("not made here: {reason}");
                not_made.push((seen.tag.clone(), reason));
            }
        }
    }
    for (tag, reason) in not_made {
        report.not_carried.push(NotCarried {
            what: format!("inbound {tag:?}"),
            reason,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::import::inbound_plan::XrayInbound;
    use crate::import::report::inbound_seen;
    use crate::store::{Changes, ServerInput, SqlStore};

    /// Two of the source's inbounds under one name (3x-ui's remarks need not differ):
    /// one inbound here, the other mapped to it, on a dry run as on a real one.
    #[tokio::test]
    async fn two_source_inbounds_of_one_name_make_one_inbound() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqlStore::open_sqlite(&dir.path().join("p.db"), Changes::default())
            .await
            .unwrap();
        let store: Arc<dyn Store> = Arc::new(store);
        let service = Service::new(store.clone());
        let cluster = store.create_cluster("c", 0).await.unwrap();
        let input = ServerInput {
            cluster_id: cluster.id,
            name: "fra".into(),
            address: "203.0.113.9".into(),
            allow_private_destinations: false,
        };
        service.create_server(&input, 0).await.unwrap();
        let report = |dry_run| {
            let mut r = Report::new("3x-ui", "2.x", dry_run);
            for port in [21_001, 21_002] {
                let mut seen = inbound_seen("t".into(), "vless".into(), port, None);
                seen.xray = Some(XrayInbound(serde_json::json!({
                    "tag": "DE", "protocol": "vless", "port": port})));
                r.inbounds.push(seen);
            }
            r
        };
        let mut dry = report(true);
        make_inbounds(&service, &mut dry, "fra", 0).await.unwrap();
        let notes: Vec<&str> = dry.inbounds.iter().map(|i| i.note.as_str()).collect();
        assert_eq!(
            notes,
            [
                "would be made here on server fra",
                "would be mapped to the inbound of the same name made above"
            ]
        );
        assert!(store.inbounds(None, None).await.unwrap().is_empty());
        let mut real = report(false);
        make_inbounds(&service, &mut real, "fra", 0).await.unwrap();
        let made = store.inbounds(None, None).await.unwrap();
        assert_eq!(made.len(), 1);
        let here: Vec<Option<i64>> = real.inbounds.iter().map(|i| i.here).collect();
        assert_eq!(here, [Some(made[0].id), Some(made[0].id)]);
        assert_eq!(made[0].port, 21_001);
    }
}
