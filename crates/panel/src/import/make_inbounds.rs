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
    let existing = store.inbounds(None, None).await?;
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
        let key = planned.reality_private_key.as_deref();
        match service
            .create_imported_inbound(&planned.input, key, dry_run, now_ms)
            .await
        {
            Ok(Some(made)) => {
                seen.here = Some(made.id);
                seen.note = format!("made here as inbound {} on server {server}", made.id);
            }
            Ok(None) => seen.note = format!("would be made here on server {server}"),
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
