//! Domain names in wire format, the form the zone is indexed and answered in, and the cache,
//! the query log, *forward* and the search walk match names in.
//!
//! A [`WireName`] is the RFC 1035 encoding (`\x03web\x04shop\x03svc\x07cluster\x05local\x00`).
//! Keys in the zone index are lower-case wire names, so a query is matched by lower-casing
//! its name once and hashing the bytes: no parsing into labels, no allocation.

use std::cmp::Ordering;
use std::fmt;

/// The longest name the wire format allows, including the final root label.
pub const MAX_NAME_LEN: usize = 255;
/// The longest label.
pub const MAX_LABEL_LEN: usize = 63;

/// A fully qualified domain name in wire format.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WireName(Vec<u8>);

/// A name could not be built: a label too long or empty, or the whole name over 255 bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a valid domain name: {0}")]
pub struct NameError(pub String);

impl WireName {
    /// The root name `.`.
    pub fn root() -> Self {
        Self(vec![0])
    }

    /// A name from dotted text (`web.shop.svc.cluster.local`, with or without the final dot).
    /// Escapes are not supported: Kubernetes names never need them.
    pub fn from_dotted(text: &str) -> Result<Self, NameError> {
        let trimmed = text.strip_suffix('.').unwrap_or(text);
        if trimmed.is_empty() {
            return Ok(Self::root());
        }
        Self::from_labels(trimmed.split('.')).map_err(|_| NameError(text.to_owned()))
    }

    /// A name from its labels, leftmost first, under the root.
    pub fn from_labels<'a>(labels: impl IntoIterator<Item = &'a str>) -> Result<Self, NameError> {
        Self::root().prepend_all(labels)
    }

    /// The wire bytes, ending with the root label.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Wraps wire bytes that are known to be a valid name (from [`WireName::as_bytes`] or a
    /// parser that checked them).
    pub(crate) fn from_wire_unchecked(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// This name under `suffix`: `labels` then the labels of `suffix`.
    pub fn prepend_all<'a>(
        &self,
        labels: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, NameError> {
        let mut out = Vec::with_capacity(64);
        for label in labels {
            let bytes = label.as_bytes();
            if bytes.is_empty() || bytes.len() > MAX_LABEL_LEN {
                return Err(NameError(label.to_owned()));
            }
            out.push(bytes.len() as u8);
            out.extend_from_slice(bytes);
        }
        out.extend_from_slice(&self.0);
        if out.len() > MAX_NAME_LEN {
            return Err(NameError(format!(
                "{}{}",
                String::from_utf8_lossy(&out),
                self
            )));
        }
        Ok(Self(out))
    }

    /// `label` followed by this name.
    pub fn child(&self, label: &str) -> Result<Self, NameError> {
        self.prepend_all([label])
    }

    /// The same name in lower case (the index key form).
    pub fn to_lowercase(&self) -> Self {
        Self(self.0.to_ascii_lowercase())
    }

    /// The parent name, `None` for the root.
    pub fn parent(&self) -> Option<Self> {
        parent(&self.0).map(|bytes| Self(bytes.to_vec()))
    }

    /// Whether this name is `zone` or below it (case-insensitive, at a label boundary).
    pub fn is_within(&self, zone: &WireName) -> bool {
        suffix_offset(&self.0, &zone.0).is_some()
    }

    /// Number of labels, not counting the root.
    pub fn label_count(&self) -> usize {
        labels(&self.0).count()
    }

    /// The labels, leftmost first.
    pub fn labels(&self) -> impl Iterator<Item = &[u8]> {
        labels(&self.0)
    }
}

impl fmt::Display for WireName {
    /// Presentation format with the final dot: `web.shop.svc.cluster.local.`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_dotted(&self.0, f)
    }
}

impl fmt::Debug for WireName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WireName({self})")
    }
}

/// Writes a wire name as dotted text; bytes outside printable ASCII and the characters
/// `.`, `\`, `"` are escaped as in zone files.
pub(crate) fn write_dotted(wire: &[u8], out: &mut impl fmt::Write) -> fmt::Result {
    let mut any = false;
    for label in labels(wire) {
        for &byte in label {
            match byte {
                b'.' | b'\\' | b'"' | b'(' | b')' | b';' | b' ' => {
                    write!(out, "\\{}", byte as char)?
                }
                0x21..=0x7e => out.write_char(byte as char)?,
                _ => write!(out, "\\{byte:03}")?,
            }
        }
        out.write_char('.')?;
        any = true;
    }
    if !any {
        out.write_char('.')?;
    }
    Ok(())
}

/// The labels of a wire name, leftmost first. Stops at the root label or at malformed input.
pub(crate) fn labels(wire: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let len = *wire.get(at)? as usize;
        if len == 0 || len > MAX_LABEL_LEN {
            return None;
        }
        let label = wire.get(at + 1..at + 1 + len)?;
        at += 1 + len;
        Some(label)
    })
}

/// The wire bytes of the parent name.
pub(crate) fn parent(wire: &[u8]) -> Option<&[u8]> {
    let len = *wire.first()? as usize;
    if len == 0 {
        return None;
    }
    wire.get(1 + len..)
}

/// Whether `fallthrough [ZONES]` lets `qname` pass on to the next plugin: `None` is no
/// `fallthrough`, an empty list every name, else the names under one of the zones.
pub(crate) fn falls_through(fallthrough: Option<&[WireName]>, qname: &[u8]) -> bool {
    fallthrough.is_some_and(|zones| {
        zones.is_empty()
            || zones
                .iter()
                .any(|zone| suffix_offset(qname, zone.as_bytes()).is_some())
    })
}

/// If `zone` is a suffix of `name` at a label boundary (compared case-insensitively), the
/// offset in `name` where it starts.
pub(crate) fn suffix_offset(name: &[u8], zone: &[u8]) -> Option<usize> {
    if zone.len() > name.len() {
        return None;
    }
    let mut at = 0;
    loop {
        if name.len() - at == zone.len() {
            return name[at..].eq_ignore_ascii_case(zone).then_some(at);
        }
        let len = *name.get(at)? as usize;
        if len == 0 {
            return None;
        }
        at += 1 + len;
        if at > name.len() - zone.len() {
            return None;
        }
    }
}

/// RFC 4034 §6.1 canonical order: compare label by label from the right, as lower-case
/// bytes. Zone files sorted this way list a name before everything below it.
pub fn canonical_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let a_labels: Vec<&[u8]> = labels(a).collect();
    let b_labels: Vec<&[u8]> = labels(b).collect();
    for (x, y) in a_labels.iter().rev().zip(b_labels.iter().rev()) {
        let order = x
            .iter()
            .map(u8::to_ascii_lowercase)
            .cmp(y.iter().map(u8::to_ascii_lowercase));
        if order != Ordering::Equal {
            return order;
        }
    }
    a_labels.len().cmp(&b_labels.len())
}

/// `names` (a directive's zones) as lower-case wire names; a name that is none is left out.
pub(crate) fn wire_zones(names: &[hickory_proto::rr::Name]) -> Vec<WireName> {
    names
        .iter()
        .filter_map(|name| WireName::from_dotted(&name.to_ascii()).ok())
        .map(|name| name.to_lowercase())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn name(text: &str) -> WireName {
        WireName::from_dotted(text).unwrap()
    }

    #[test]
    fn dotted_round_trip() {
        for text in ["web.shop.svc.cluster.local.", ".", "a.", "_http._tcp.x.y."] {
            assert_eq!(name(text).to_string(), text, "{text}");
        }
        assert_eq!(name("cluster.local").to_string(), "cluster.local.");
    }

    #[test]
    fn rejects_bad_labels() {
        assert!(WireName::from_dotted("a..b").is_err());
        assert!(WireName::from_dotted(&"x".repeat(64)).is_err());
        let long = vec!["abcdefghij"; 26].join(".");
        assert!(WireName::from_dotted(&long).is_err(), "over 255 bytes");
    }

    #[test]
    fn suffix_is_found_at_label_boundaries_only() {
        let web = name("web.shop.svc.Cluster.Local.");
        assert_eq!(
            suffix_offset(web.as_bytes(), name("cluster.local").as_bytes()),
            Some(13)
        );
        assert_eq!(
            suffix_offset(web.as_bytes(), name(".").as_bytes()),
            Some(27)
        );
        assert_eq!(
            suffix_offset(web.as_bytes(), name("ster.local").as_bytes()),
            None
        );
        assert_eq!(
            suffix_offset(name("local").as_bytes(), web.as_bytes()),
            None
        );
        assert!(web.is_within(&name("svc.cluster.local")));
        assert!(!name("cluster.local").is_within(&name("svc.cluster.local")));
    }

    #[test]
    fn parents_walk_to_the_root() {
        let mut at = Some(name("a.b.c."));
        let mut seen = Vec::new();
        while let Some(n) = at {
            seen.push(n.to_string());
            at = n.parent();
        }
        assert_eq!(seen, ["a.b.c.", "b.c.", "c.", "."]);
    }

    #[test]
    fn canonical_order_is_right_to_left() {
        let mut names = [
            name("b.example."),
            name("example."),
            name("z.a.example."),
            name("A.example."),
            name("a.example."),
        ];
        names.sort_by(|a, b| canonical_cmp(a.as_bytes(), b.as_bytes()));
        let sorted: Vec<String> = names.iter().map(ToString::to_string).collect();
        assert_eq!(
            sorted,
            [
                "example.",
                "A.example.",
                "a.example.",
                "z.a.example.",
                "b.example."
            ]
        );
    }
}
