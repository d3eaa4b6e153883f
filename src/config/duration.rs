//! Go's duration syntax (`time.ParseDuration`), as CoreDNS options take it: `5s`, `1m30s`,
//! `500ms`, `1.5h`, `0`. Units: `ns`, `us` (`µs`, `μs`), `ms`, `s`, `m`, `h`. Negative
//! durations are refused (no option here means anything by them).

use std::time::Duration;

/// Parses a Go duration.
pub(crate) fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let invalid =
        || format!("invalid duration '{text}' (expected Go syntax such as 5s, 1m30s, 500ms)");
    let mut rest = text;
    if let Some(unsigned) = rest.strip_prefix('+') {
        rest = unsigned;
    } else if rest.starts_with('-') {
        return Err(format!("duration '{text}' must not be negative"));
    }
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let integer_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (integer, after) = rest.split_at(integer_len);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(after) => {
                let len = after.bytes().take_while(u8::is_ascii_digit).count();
                after.split_at(len)
            }
            None => ("", after),
        };
        if integer.is_empty() && fraction.is_empty() {
            return Err(invalid());
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let nanos_per_unit: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(format!("missing unit in duration '{text}'")),
            _ => return Err(format!("unknown unit '{unit}' in duration '{text}'")),
        };
        let whole = if integer.is_empty() {
            0
        } else {
            integer
                .parse::<u128>()
                .map_err(|_| format!("duration '{text}' is too large"))?
        };
        let mut nanos = whole
            .checked_mul(nanos_per_unit)
            .ok_or_else(|| format!("duration '{text}' is too large"))?;
        // The fraction, to the nanosecond; digits beyond 18 cannot matter.
        let mut scale: u128 = 1;
        let mut numerator: u128 = 0;
        for digit in fraction.bytes().take(18) {
            numerator = numerator * 10 + u128::from(digit - b'0');
            scale *= 10;
        }
        nanos += numerator * nanos_per_unit / scale;
        total = total
            .checked_add(nanos)
            .ok_or_else(|| format!("duration '{text}' is too large"))?;
        if total > i64::MAX as u128 {
            return Err(format!("duration '{text}' is too large"));
        }
        rest = after;
    }
    let seconds = u64::try_from(total / 1_000_000_000)
        .map_err(|_| format!("duration '{text}' is too large"))?;
    let nanos = u32::try_from(total % 1_000_000_000).map_err(|_| invalid())?;
    Ok(Duration::new(seconds, nanos))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn valid() {
        let cases = [
            ("zero", "0", Duration::ZERO),
            ("plus", "+5s", Duration::from_secs(5)),
            ("seconds", "5s", Duration::from_secs(5)),
            ("minutes and seconds", "1m30s", Duration::from_secs(90)),
            ("millis", "500ms", Duration::from_millis(500)),
            ("micros", "7us", Duration::from_micros(7)),
            ("micro sign", "7µs", Duration::from_micros(7)),
            ("greek mu", "7μs", Duration::from_micros(7)),
            ("nanos", "9ns", Duration::from_nanos(9)),
            ("hours", "2h", Duration::from_secs(7200)),
            ("fraction", "1.5h", Duration::from_secs(5400)),
            ("leading dot", ".5s", Duration::from_millis(500)),
            ("trailing dot", "1.s", Duration::from_secs(1)),
            ("zero seconds", "0s", Duration::ZERO),
            ("many parts", "1h2m3s4ms", Duration::new(3723, 4_000_000)),
            (
                "long fraction",
                "1.0000000000000000000001s",
                Duration::from_secs(1),
            ),
        ];
        for (name, text, want) in cases {
            assert_eq!(parse_go_duration(text), Ok(want), "{name}");
        }
    }

    #[test]
    fn invalid() {
        let cases = [
            ("empty", "", "invalid duration"),
            ("no unit", "5", "missing unit"),
            ("bad unit", "5d", "unknown unit"),
            ("negative", "-5s", "negative"),
            ("dot only", ".s", "invalid duration"),
            ("sign only", "+", "invalid duration"),
            ("letters", "s", "invalid duration"),
            ("overflow", "9999999999999999999999999h", "too large"),
            ("beyond int64", "3000000h", "too large"),
            ("space", "5 s", "unknown unit"),
        ];
        for (name, text, want) in cases {
            let error = parse_go_duration(text).unwrap_err();
            assert!(error.contains(want), "{name}: {error}");
        }
    }
}
