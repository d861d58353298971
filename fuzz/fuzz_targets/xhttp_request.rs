//! A request line's method and target, as an XHTTP inbound reads them: `classify`,
//! the padding's length and check, and the server's whole check (host, path,
//! padding, mode) on arbitrary bytes. No panic; what is accepted is consistent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::xhttp::{
    MAX_SESSION_LEN, Mode, Range, Request, Settings, check_padding, classify, padding_len,
};
use switchyard_transport::xhttp::Server;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (method, target) = text.split_once(' ').unwrap_or(("GET", &text));
    let (target, host) = target.split_once(' ').unwrap_or((target, "node.test"));
    let len = padding_len(target);
    let range = Range::new(10, 1000).unwrap();
    assert_eq!(
        check_padding(target, range).is_ok(),
        range.contains(len as u64)
    );
    if let Ok(kind) = classify("/xh/", method, target) {
        let session = match kind {
            Request::Download { session }
            | Request::StreamUp { session }
            | Request::Packet { session, .. } => session,
            Request::StreamOne => "",
        };
        assert!(session.len() <= MAX_SESSION_LEN);
        assert!(target.starts_with("/xh/"));
    }
    let mut settings = Settings::new("/xh");
    settings.mode = Mode::ALL[usize::from(mode) % Mode::ALL.len()];
    settings.host = (mode & 0x80 != 0).then(|| "node.test".to_owned());
    settings.x_padding_bytes = range;
    let server = Server::new(settings);
    if let Ok(kind) = server.check(method, target, Some(host)) {
        assert!(server.settings().mode.accepts(&kind));
        assert!(range.contains(len as u64));
    }
});
