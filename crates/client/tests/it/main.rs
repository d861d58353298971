//! The client's integration tests, in one binary.

mod auto_live;
mod clash_subscription;
mod hold;
mod http_proxy;
mod icmp;
mod network;
mod outbounds;
mod page;
mod route_identity;
