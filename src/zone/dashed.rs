//! Addresses as CoreDNS spells them in a label: `10-244-1-5`, `2001-db8--0`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A pod label's address, as CoreDNS decodes it: exactly three `-` and no `--` is IPv4,
/// anything else has every `-` turned into `:` and must parse as IPv6. An IPv4-mapped IPv6
/// address answers as IPv4, as Go's `net.IP.To4` makes it.
pub fn ip_from_dashed(label: &[u8]) -> Option<IpAddr> {
    match dashed_v4(label) {
        Some(v4) => v4.map(IpAddr::V4),
        None => from_text(label),
    }
}

/// [`ip_from_dashed`] through the text of the label, for every spelling.
fn from_text(label: &[u8]) -> Option<IpAddr> {
    // Neither parser takes anything but digits, hex letters, `-` (`.` or `:` here), `.` and
    // `:`: most labels (a Service's, a hostname) stop at their first letter past `f`.
    if !label
        .iter()
        .all(|&b| b.is_ascii_hexdigit() || matches!(b, b'-' | b'.' | b':'))
    {
        return None;
    }
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

/// A label of digits and exactly three single dashes, read as [`ip_from_dashed`] reads it
/// (four octets as `Ipv4Addr`'s parser takes them: one to three digits, no leading zero,
/// at most 255), without going through text: `Some(None)` when it is not an address.
/// `None` for any other label, left to the general path. Every endpoint's name is read this
/// way when the zone is built.
fn dashed_v4(label: &[u8]) -> Option<Option<Ipv4Addr>> {
    if label.len() > 15 || label.iter().any(|&b| b != b'-' && !b.is_ascii_digit()) {
        return None;
    }
    let mut parts = [&label[..0]; 4];
    let mut split = label.split(|&b| b == b'-');
    for part in &mut parts {
        *part = split.next()?;
    }
    // Three dashes, none doubled: read as IPv4 or not at all. Anything else (`--`, a dash at
    // either end, more dashes) may be IPv6 and is the general path's.
    if split.next().is_some() || parts.iter().any(|part| part.is_empty()) {
        return None;
    }
    let mut octets = [0u8; 4];
    for (octet, digits) in octets.iter_mut().zip(parts) {
        match octet_of(digits) {
            Some(value) => *octet = value,
            None => return Some(None),
        }
    }
    Some(Some(Ipv4Addr::from(octets)))
}

/// One to three ASCII digits without a leading zero, at most 255.
fn octet_of(digits: &[u8]) -> Option<u8> {
    if digits.len() > 3 || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let value = digits
        .iter()
        .fold(0u16, |value, digit| value * 10 + u16::from(digit - b'0'));
    u8::try_from(value).ok()
}

/// `octet`'s decimal digits at the start of `digits`; how many.
pub(crate) fn decimal(octet: u8, digits: &mut [u8; 3]) -> usize {
    if octet >= 100 {
        *digits = [
            b'0' + octet / 100,
            b'0' + octet / 10 % 10,
            b'0' + octet % 10,
        ];
        3
    } else if octet >= 10 {
        digits[..2].copy_from_slice(&[b'0' + octet / 10, b'0' + octet % 10]);
        2
    } else {
        digits[0] = b'0' + octet;
        1
    }
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
        if let IpAddr::V4(v4) = ip {
            // Written digit by digit: every endpoint's name and PTR target is made here
            // when the zone is built, and the formatter was a tenth of a build.
            let mut at = 0;
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    dashed.bytes[at] = b'-';
                    at += 1;
                }
                let mut digits = [0u8; 3];
                let len = decimal(octet, &mut digits);
                dashed.bytes[at..at + len].copy_from_slice(&digits[..len]);
                at += len;
            }
            // At most 15 bytes.
            dashed.len = at as u8;
            return dashed;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every label of up to `len` characters of `alphabet`.
    fn labels(alphabet: &[u8], len: usize) -> Vec<Vec<u8>> {
        let mut all = vec![Vec::new()];
        let mut last = vec![Vec::new()];
        for _ in 0..len {
            last = last
                .iter()
                .flat_map(|label: &Vec<u8>| {
                    alphabet.iter().map(move |&c| {
                        let mut next = label.clone();
                        next.push(c);
                        next
                    })
                })
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    /// CoreDNS's reading, spelt out plainly: three single dashes is IPv4, anything else
    /// IPv6 with every `-` a `:`, an IPv4-mapped address as IPv4.
    fn reference(label: &[u8]) -> Option<IpAddr> {
        let text = std::str::from_utf8(label).ok()?;
        if text.matches('-').count() == 3 && !text.contains("--") {
            return text
                .replace('-', ".")
                .parse::<Ipv4Addr>()
                .ok()
                .map(IpAddr::V4);
        }
        let v6: Ipv6Addr = text.replace('-', ":").parse().ok()?;
        Some(v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4))
    }

    #[test]
    fn the_shortcuts_read_every_label_as_the_reference_does() {
        let mut checked = 0;
        // Short labels of every shape, then dotted-quad lengths with the digits that decide
        // (leading zeros, 255 against 256).
        let mut all = labels(b"0123456789-", 5);
        all.extend(labels(b"0af-g:.", 6));
        all.extend(labels(b"025-", 9));
        all.extend(labels(b"0156-", 8).into_iter().map(|mut l| {
            l.extend_from_slice(b"-1");
            l
        }));
        for label in &all {
            assert_eq!(
                ip_from_dashed(label),
                reference(label),
                "{}",
                String::from_utf8_lossy(label)
            );
            checked += usize::from(dashed_v4(label).is_some());
        }
        // The shortcut did read tens of thousands of them itself (56,279 of about a million).
        assert!(checked > 50_000, "{checked} of {}", all.len());
        for label in [
            &b"255-255-255-255"[..],
            b"256-1-1-1",
            b"1-2-3-04",
            b"0-0-0-0",
            b"1000-1-1-1",
            b"1-2-3-4-",
            b"-1-2-3-4",
            b"1--2-3",
            b"1-2-3-4-5",
            b"1-2-3",
            b"ffff-1-2-3",
            b"0-0-0-0-0-ffff-a02-304",
            b"fd00--a",
            b"FD00--A",
            b"web-0",
            b"db-0",
            b"--ffff-1.2.3.4",
            b"1:2::3",
        ] {
            assert_eq!(ip_from_dashed(label), reference(label), "{label:?}");
        }
        assert_eq!(
            ip_from_dashed(b"10-244-1-5"),
            Some(IpAddr::V4(Ipv4Addr::new(10, 244, 1, 5)))
        );
    }

    #[test]
    fn an_ipv4_address_is_dashed_as_its_text() {
        for a in 0..=255u8 {
            for ip in [
                Ipv4Addr::new(a, 0, 9, 10),
                Ipv4Addr::new(99, a, 100, 255),
                Ipv4Addr::new(1, 2, a, a),
            ] {
                let expected = ip.to_string().replace('.', "-");
                assert_eq!(Dashed::of(IpAddr::V4(ip)).as_str(), expected);
                assert_eq!(ip_from_dashed(expected.as_bytes()), Some(IpAddr::V4(ip)));
            }
        }
    }
}
