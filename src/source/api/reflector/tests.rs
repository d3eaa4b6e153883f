//! A watch response's frames, in each encoding: events split where the stream splits
//! them, bookmarks with and without the end of a streaming list, an ERROR event's Status.

#![allow(clippy::unwrap_used)]

use super::*;

fn frames(encoding: Encoding, body: Vec<u8>) -> Frames {
    Frames {
        body: Body::from(body),
        encoding,
        inflate: None,
        buffer: BytesMut::new(),
        scanned: 0,
        ended: false,
    }
}

fn names(events: &[WatchEvent<core::Namespace>]) -> Vec<String> {
    events
        .iter()
        .map(|event| match event {
            WatchEvent::Added(ns) => format!("ADDED {}", ns.metadata.name.as_deref().unwrap()),
            WatchEvent::Modified(ns) => {
                format!("MODIFIED {}", ns.metadata.name.as_deref().unwrap())
            }
            WatchEvent::Deleted(ns) => format!("DELETED {}", ns.metadata.name.as_deref().unwrap()),
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end,
            } => format!("BOOKMARK {resource_version} {initial_events_end}"),
            WatchEvent::Error(status) => format!("ERROR {} {}", status.code, status.reason),
        })
        .collect()
}

async fn all(mut frames: Frames) -> Vec<WatchEvent<core::Namespace>> {
    let mut events = Vec::new();
    while let Some(event) = frames.next::<core::Namespace>().await {
        events.push(event.unwrap());
    }
    events
}

#[tokio::test]
async fn json_events_one_per_line() {
    let body = concat!(
        r#"{"type":"ADDED","object":{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"shop","resourceVersion":"3"}}}"#,
        "\n\n",
        r#"{"type":"BOOKMARK","object":{"kind":"Namespace","apiVersion":"v1","metadata":{"resourceVersion":"4","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
        "\n",
        r#"{"type":"DELETED","object":{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"shop","resourceVersion":"5"}}}"#,
        "\n",
        r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}"#,
        "\n",
    );
    let events = all(frames(Encoding::Json, body.as_bytes().to_vec())).await;
    assert_eq!(
        names(&events),
        [
            "ADDED shop",
            "BOOKMARK 4 true",
            "DELETED shop",
            "ERROR 410 Expired"
        ]
    );
}

/// A protobuf message's field `number` holding `bytes`.
fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![number << 3 | 2];
    let mut length = bytes.len();
    loop {
        let byte = (length & 0x7f) as u8;
        length >>= 7;
        if length == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(bytes);
    out
}

/// A watch frame: its length, then a WatchEvent whose object is `kind`'s envelope of `raw`.
fn protobuf_frame(event: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [field(1, b"v1"), field(2, kind.as_bytes())].concat();
    let unknown = [field(1, &type_meta), field(2, raw)].concat();
    let object = [b"k8s\0".as_slice(), &unknown].concat();
    let message = [field(1, event.as_bytes()), field(2, &field(1, &object))].concat();
    [(message.len() as u32).to_be_bytes().as_slice(), &message].concat()
}

fn namespace_raw(name: &str, version: &str, annotation: Option<&str>) -> Vec<u8> {
    let mut meta = [field(1, name.as_bytes()), field(6, version.as_bytes())].concat();
    if let Some(key) = annotation {
        meta.extend(field(
            12,
            &[field(1, key.as_bytes()), field(2, b"true")].concat(),
        ));
    }
    field(1, &meta)
}

#[tokio::test]
async fn protobuf_events_after_their_length() {
    let status = [field(4, b"Expired"), vec![6 << 3, 0x9a, 0x03]].concat();
    let body = [
        protobuf_frame("ADDED", "Namespace", &namespace_raw("shop", "3", None)),
        protobuf_frame("MODIFIED", "Namespace", &namespace_raw("shop", "4", None)),
        protobuf_frame("BOOKMARK", "Namespace", &namespace_raw("", "5", None)),
        protobuf_frame(
            "BOOKMARK",
            "Namespace",
            &namespace_raw("", "6", Some(INITIAL_EVENTS_END)),
        ),
        protobuf_frame("ERROR", "Status", &status),
    ]
    .concat();
    let events = all(frames(Encoding::Protobuf, body.clone())).await;
    assert_eq!(
        names(&events),
        [
            "ADDED shop",
            "MODIFIED shop",
            "BOOKMARK 5 false",
            "BOOKMARK 6 true",
            "ERROR 410 Expired"
        ]
    );
    // Cut short: the whole frames are read, the partial one ends the watch (resumed).
    let events = all(frames(Encoding::Protobuf, body[..body.len() - 3].to_vec())).await;
    assert_eq!(events.len(), 4);
}

#[tokio::test]
async fn a_frame_too_large_is_an_error_and_ends_the_watch() {
    let mut protobuf = frames(Encoding::Protobuf, vec![0xff, 0xff, 0xff, 0xff, 0, 0]);
    assert!(protobuf.next::<core::Namespace>().await.unwrap().is_err());
    assert!(protobuf.next::<core::Namespace>().await.is_none());
    let mut json = frames(Encoding::Json, vec![b'{'; MAX_FRAME + 2]);
    assert!(json.next::<core::Namespace>().await.unwrap().is_err());
    assert!(json.next::<core::Namespace>().await.is_none());
}

/// A line arriving in many chunks is one event.
#[test]
fn a_json_event_in_many_chunks_is_one_event() {
    let line = br#"{"type":"ADDED","object":{"metadata":{"name":"shop","resourceVersion":"3"}}}"#;
    let mut frames = frames(Encoding::Json, Vec::new());
    for chunk in line.chunks(7) {
        frames.buffer.extend_from_slice(chunk);
        assert!(frames.split().is_none());
    }
    frames.buffer.extend_from_slice(b"\n{\"type\"");
    let event = frames.split().unwrap().unwrap();
    assert_eq!(&event[..], line);
    assert!(frames.split().is_none());
    assert_eq!(&frames.buffer[..], b"{\"type\"");
}

#[test]
fn an_error_body_is_its_status_in_either_encoding() {
    let json = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"sendInitialEvents is forbidden","reason":"Invalid","code":422}"#;
    let status = error_status(Encoding::Json, 422, json);
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let raw = [
        field(3, b"forbidden"),
        field(4, b"Forbidden"),
        vec![6 << 3, 0x93, 0x03],
    ]
    .concat();
    let type_meta = [field(1, b"v1"), field(2, b"Status")].concat();
    let body = [
        b"k8s\0".as_slice(),
        &[field(1, &type_meta), field(2, &raw)].concat(),
    ]
    .concat();
    let status = error_status(Encoding::Protobuf, 403, &body);
    assert_eq!(
        (status.code, status.reason.as_str(), status.message.as_str()),
        (403, "Forbidden", "forbidden")
    );
    // Not a Status (a proxy's page): the code and the text.
    let status = error_status(Encoding::Json, 502, b"<html>Bad Gateway</html>\n");
    assert_eq!(
        (status.code, status.message.as_str()),
        (502, "<html>Bad Gateway</html>")
    );
}

/// `parts` each gzipped on its own and joined, as the API server's watch writes a streaming
/// list's events under `WatchListCompression`: one gzip member per flush.
fn gzip_members(parts: &[&[u8]]) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    for part in parts {
        let mut member = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        member.write_all(part).unwrap();
        out.extend(member.finish().unwrap());
    }
    out
}

#[tokio::test]
async fn a_gzip_watch_is_inflated_member_by_member() {
    let added = protobuf_frame("ADDED", "Namespace", &namespace_raw("shop", "3", None));
    let end = protobuf_frame(
        "BOOKMARK",
        "Namespace",
        &namespace_raw("", "4", Some(INITIAL_EVENTS_END)),
    );
    let deleted = protobuf_frame("DELETED", "Namespace", &namespace_raw("shop", "5", None));
    // A frame split across members, as a flush may fall inside one.
    let (head, tail) = end.split_at(5);
    let body = gzip_members(&[&added, head, &[tail, &deleted].concat()]);
    let mut gzip = frames(Encoding::Protobuf, body.clone());
    gzip.inflate = Some(Inflate::new());
    assert_eq!(
        names(&all(gzip).await),
        ["ADDED shop", "BOOKMARK 4 true", "DELETED shop"]
    );

    // As the connection hands it over, in chunks of any size.
    let plain = [added.as_slice(), &end, &deleted].concat();
    for size in [1, 3, 17, body.len()] {
        let mut inflate = Inflate::new();
        let mut out = BytesMut::new();
        for chunk in body.chunks(size) {
            inflate.push(chunk, &mut out).unwrap();
        }
        inflate.finish().unwrap();
        assert_eq!(&out[..], plain.as_slice(), "chunks of {size}");
    }
}

#[test]
fn a_broken_or_cut_gzip_body_is_an_error() {
    let body = gzip_members(&[b"{\"kind\":\"List\"}".as_slice()]);
    let mut out = BytesMut::new();
    let mut broken = body.clone();
    broken[0] = b'{';
    let why = Inflate::new().push(&broken, &mut out).unwrap_err();
    assert!(why.contains("gzip"), "{why}");

    let mut inflate = Inflate::new();
    inflate.push(&body[..body.len() - 4], &mut out).unwrap();
    let why = inflate.finish().unwrap_err();
    assert!(why.contains("ended early"), "{why}");
}

#[tokio::test]
async fn a_gzip_list_is_inflated_whole_and_an_unknown_coding_refused() {
    let list = br#"{"kind":"List","metadata":{"resourceVersion":"7"},"items":[]}"#;
    let response = |coding: &str, body: Vec<u8>| {
        http::Response::builder()
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::CONTENT_ENCODING, coding)
            .body(Body::from(body))
            .unwrap()
    };
    let gzip = Response::of(response("gzip", gzip_members(&[list.as_slice()]))).unwrap();
    assert!(gzip.gzip);
    assert_eq!(&gzip.collect().await.unwrap()[..], list.as_slice());
    let plain = Response::of(response("identity", list.to_vec())).unwrap();
    assert_eq!(&plain.collect().await.unwrap()[..], list.as_slice());
    let Err(Failure::Other(why)) = Response::of(response("br", list.to_vec())) else {
        panic!("a coding not asked for is refused");
    };
    assert!(why.contains("\"br\""), "{why}");
}
