//! Addresses as CoreDNS spells them in a label: `10-244-1-5`, `2001-db8--0`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A pod label's address, as CoreDNS decodes it: exactly three `-` and no `--` is IPv4,
/// anything else has every `-` turned into `:` and must parse as IPv6. An IPv4-mapped IPv6
/// address answers as IPv4, as Go's `net.IP.To4` makes it.
pub fn ip_from_dashed(label: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(label).ok()?;
    let dashes = text.bytes().filter(|&b| b == b'-').count();
    // The label with its dashes turned into `separator`, in place (a label is at most 63
    // bytes): a pod's name is answered without allocating.
    let mut buffer = [0u8; 63];
    if dashes == 3 && !text.contains("--") {
        return respelled(label, b'.', &mut buffer)?
            .parse::<Ipv4Addr>()
            .ok()
            .map(IpAddr::V4);
    }
    let v6: Ipv6Addr = respelled(label, b':', &mut buffer)?.parse().ok()?;
    Some(match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    })
}

/// `label` with each `-` turned into `separator`, in `buffer`.
fn respelled<'b>(label: &[u8], separator: u8, buffer: &'b mut [u8; 63]) -> Option<&'b str> {
    let out = buffer.get_mut(..label.len())?;
    for (to, &from) in out.iter_mut().zip(label) {
        *to = if from == b'-' { separator } else { from };
    }
    std::str::from_utf8(out).ok()
}

/// The dashed label CoreDNS gives an endpoint without a hostname: `10-244-1-5`, and for
/// IPv6 every `:` as `-` with a `0` after a trailing `-` (`2001-db8--0`).
pub fn dashed_ip(ip: IpAddr) -> String {
    Dashed::of(ip).as_str().to_owned()
}

/// An address as CoreDNS's dashed label spells it ([`dashed_ip`]), made without allocating.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dashed {
    len: u8,
    bytes: [u8; 47],
}

impl Default for Dashed {
    fn default() -> Self {
        Self {
            len: 0,
            bytes: [0; 47],
        }
    }
}

impl Dashed {
    pub(crate) fn of(ip: IpAddr) -> Self {
        use std::fmt::Write as _;
        let mut dashed = Self::default();
        // An address's text is at most 45 bytes.
        let _ = write!(dashed, "{ip}");
        let separator = if ip.is_ipv4() { b'.' } else { b':' };
        for byte in &mut dashed.bytes[..usize::from(dashed.len)] {
            if *byte == separator {
                *byte = b'-';
            }
        }
        if ip.is_ipv6() && dashed.as_bytes().ends_with(b"-") {
            let _ = dashed.write_str("0");
        }
        dashed
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only whole `str`s are ever written in.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

impl std::fmt::Write for Dashed {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let start = usize::from(self.len);
        let end = start + text.len();
        self.bytes
            .get_mut(start..end)
            .ok_or(std::fmt::Error)?
            .copy_from_slice(text.as_bytes());
        self.len = end as u8;
        Ok(())
    }
}
