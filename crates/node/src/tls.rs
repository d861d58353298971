//! TLS for inbounds: the transport layer's certificates from PEM files or inline PEM,
//! swappable live ([`switchyard_transport::certificate`]; the panel's own HTTPS
//! uses them too).

pub use switchyard_transport::certificate::*;
