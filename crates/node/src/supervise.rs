//! Long-lived tasks, supervised: the tunnel crate's supervisor, shared with the client.

#[cfg(test)]
pub(crate) use switchyard_tunnel::supervise::RESTART_FIRST;
pub(crate) use switchyard_tunnel::supervise::supervise;
