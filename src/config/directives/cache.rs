//! `cache [TTL] [ZONES...] { ... }`
//!
//! As CoreDNS's *cache* (`plugin/cache/setup.go`):
//!
//! - The first argument is the TTL when it is an integer (it must be positive; it caps the TTL
//!   of both classes), else a zone. Zones default to the server block's.
//! - `success CAPACITY [TTL [MINTTL]]` and `denial CAPACITY [TTL [MINTTL]]`: TTL positive,
//!   MINTTL not negative. The capacity is what CoreDNS's sharded cache really holds: rounded
//!   down to a multiple of 256 (its shards), and at least 1024 (4 per shard) — so CoreDNS's
//!   acceptance of 0 or a negative capacity is kept too, as 1024.
//! - `disable success|denial [ZONES...]` (the root when no zone is given; a later line for the
//!   same class replaces an earlier one, as in CoreDNS).
//! - `prefetch AMOUNT [DURATION [PERCENTAGE%]]` (1 m, 10 %; the percentage in 10..=90). An
//!   amount of 0 turns prefetching off, as it does in CoreDNS.
//! - `serve_stale [DURATION [immediate|verify]]` (1 h, immediate).
//! - `servfail DURATION` (5 s; 0 disables; at most 5 m, RFC 2308).
//! - `keepttl`.
//! - Once per server block. Unlike CoreDNS, extra arguments after `success`/`denial`'s MINTTL
//!   are refused rather than ignored.

use std::time::Duration;

use hickory_proto::rr::Name;

use super::{
    Context, arguments, bad_value, duration, invalid, no_block, one_argument, unknown_property,
    zones,
};
use crate::config::error::Error;
use crate::config::lexer::Token;
use crate::config::syntax::Line;

/// The *cache* directive: `cache [TTL] [ZONES...] { ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheConfig {
    /// Zones cached (the server block's when none are given).
    pub zones: Vec<Name>,
    /// Positive answers.
    pub success: CacheClass,
    /// NXDOMAIN and NODATA answers.
    pub denial: CacheClass,
    /// `disable success ZONES...`.
    pub disable_success: Vec<Name>,
    /// `disable denial ZONES...`.
    pub disable_denial: Vec<Name>,
    /// `prefetch AMOUNT [DURATION] [PERCENTAGE%]` (`None` also for an AMOUNT of 0, which
    /// CoreDNS treats as off).
    pub prefetch: Option<Prefetch>,
    /// `serve_stale [DURATION] [immediate|verify]`.
    pub serve_stale: Option<ServeStale>,
    /// `servfail DURATION` (default 5 s; 0 disables; at most 5 min).
    pub servfail: Duration,
    /// `keepttl`: answer with the TTLs as received.
    pub keepttl: bool,
}

/// Capacity and TTL bounds of one class of cached answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheClass {
    /// Entries (default 9984 = 256 shards × 39; rounded down to a multiple of 256, at least
    /// 1024).
    pub capacity: usize,
    /// Largest TTL kept (3600 for success, 1800 for denial; `cache TTL` lowers both).
    pub max_ttl: u32,
    /// Smallest TTL kept (default 5).
    pub min_ttl: u32,
}

/// *cache*'s `prefetch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefetch {
    /// Queries seen without a gap of `duration`...
    pub amount: u32,
    /// ... (default 1 m)...
    pub duration: Duration,
    /// ... refresh when the remaining TTL drops below this percentage (default 10).
    pub percentage: u8,
}

/// *cache*'s `serve_stale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeStale {
    /// How long past expiry an entry may still be served (default 1 h).
    pub duration: Duration,
    /// `verify` (CoreDNS's spelling): ask the upstream first, serve stale only if it fails
    /// (default `immediate`: serve stale at once and refresh in the background).
    pub verified: bool,
}

const DIRECTIVE: &str = "cache";

/// Shards of CoreDNS's cache: capacities are multiples of this.
const SHARDS: usize = 256;
/// CoreDNS's smallest cache: 4 entries per shard.
pub(crate) const MIN_CAPACITY: usize = 4 * SHARDS;
/// CoreDNS's default capacity per class: 39 entries per shard.
pub(crate) const DEFAULT_CAPACITY: usize = 39 * SHARDS;
/// The default largest TTL of positive answers.
pub(crate) const DEFAULT_SUCCESS_TTL: u32 = 3600;
/// The default largest TTL of denials.
pub(crate) const DEFAULT_DENIAL_TTL: u32 = 1800;
/// The default smallest TTL.
pub(crate) const DEFAULT_MIN_TTL: u32 = 5;
/// The default `servfail` duration.
pub(crate) const DEFAULT_SERVFAIL: Duration = Duration::from_secs(5);
/// The longest `servfail` (RFC 2308 § 7.1).
const MAX_SERVFAIL: Duration = Duration::from_secs(300);
/// The default `prefetch` DURATION.
const DEFAULT_PREFETCH_DURATION: Duration = Duration::from_secs(60);
/// The default `prefetch` PERCENTAGE.
const DEFAULT_PREFETCH_PERCENTAGE: u8 = 10;
/// The default `serve_stale` DURATION.
const DEFAULT_STALE: Duration = Duration::from_secs(3600);

/// Parses the `cache` line.
pub(crate) fn parse(line: &Line, context: &Context<'_>) -> Result<CacheConfig, Error> {
    let mut success = CacheClass {
        capacity: DEFAULT_CAPACITY,
        max_ttl: DEFAULT_SUCCESS_TTL,
        min_ttl: DEFAULT_MIN_TTL,
    };
    let mut denial = CacheClass {
        capacity: DEFAULT_CAPACITY,
        max_ttl: DEFAULT_DENIAL_TTL,
        min_ttl: DEFAULT_MIN_TTL,
    };
    let mut args: &[Token] = &line.args;
    if let Some((first, rest)) = args.split_first()
        && is_integer(&first.text)
    {
        let ttl = ttl(line, first)?;
        success.max_ttl = ttl;
        denial.max_ttl = ttl;
        args = rest;
    }
    let mut config = CacheConfig {
        zones: zones(DIRECTIVE, line, args, context.block_zones)?,
        success,
        denial,
        disable_success: Vec::new(),
        disable_denial: Vec::new(),
        prefetch: None,
        serve_stale: None,
        servfail: DEFAULT_SERVFAIL,
        keepttl: false,
    };
    for option in line.options() {
        no_block(DIRECTIVE, option)?;
        match option.name() {
            "success" => class(option, &mut config.success)?,
            "denial" => class(option, &mut config.denial)?,
            "disable" => disable(option, &mut config)?,
            "prefetch" => config.prefetch = prefetch(option)?,
            "serve_stale" => config.serve_stale = Some(serve_stale(option)?),
            "servfail" => {
                let arg = one_argument(DIRECTIVE, option)?;
                let servfail = duration(DIRECTIVE, option, arg)?;
                if servfail > MAX_SERVFAIL {
                    return Err(bad_value(
                        DIRECTIVE,
                        option,
                        arg,
                        "caching SERVFAIL responses over 5 minutes is not permitted (RFC 2308)",
                    ));
                }
                config.servfail = servfail;
            }
            "keepttl" => {
                arguments(DIRECTIVE, option, 0, Some(0))?;
                config.keepttl = true;
            }
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    Ok(config)
}

/// Whether CoreDNS's `strconv.Atoi` would read `text` as an integer.
fn is_integer(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A positive TTL in seconds.
fn ttl(line: &Line, arg: &Token) -> Result<u32, Error> {
    arg.text
        .parse::<u32>()
        .ok()
        .filter(|ttl| *ttl > 0)
        .ok_or_else(|| {
            bad_value(
                DIRECTIVE,
                line,
                arg,
                &format!(
                    "TTL '{}' must be a positive number of seconds (at most {})",
                    arg.text,
                    u32::MAX
                ),
            )
        })
}

/// `success|denial CAPACITY [TTL [MINTTL]]`.
fn class(option: &Line, class: &mut CacheClass) -> Result<(), Error> {
    let args = arguments(DIRECTIVE, option, 1, Some(3))?;
    if let Some(capacity) = args.first() {
        class.capacity = shard_capacity(capacity_value(option, capacity)?);
    }
    if let Some(max) = args.get(1) {
        class.max_ttl = ttl(option, max)?;
    }
    if let Some(min) = args.get(2) {
        class.min_ttl = min.text.parse::<u32>().map_err(|_| {
            bad_value(
                DIRECTIVE,
                option,
                min,
                &format!(
                    "MINTTL '{}' must be a non-negative number of seconds",
                    min.text
                ),
            )
        })?;
    }
    Ok(())
}

/// A capacity as CoreDNS reads it (any integer, even a negative one).
fn capacity_value(option: &Line, arg: &Token) -> Result<i64, Error> {
    if !is_integer(&arg.text) {
        return Err(bad_value(
            DIRECTIVE,
            option,
            arg,
            &format!("CAPACITY '{}' is not an integer", arg.text),
        ));
    }
    // Beyond i64 is beyond any memory; saturate like the cap below would.
    Ok(arg
        .text
        .parse::<i64>()
        .unwrap_or(if arg.text.starts_with('-') {
            i64::MIN
        } else {
            i64::MAX
        }))
}

/// The entries a cache of `requested` really holds in CoreDNS: whole shards, at least 4 each.
pub(crate) fn shard_capacity(requested: i64) -> usize {
    let per_shard = usize::try_from(requested / SHARDS as i64).unwrap_or(0);
    per_shard.max(MIN_CAPACITY / SHARDS).saturating_mul(SHARDS)
}

/// `disable success|denial [ZONES...]`.
fn disable(option: &Line, config: &mut CacheConfig) -> Result<(), Error> {
    let args = arguments(DIRECTIVE, option, 1, None)?;
    let Some((which, names)) = args.split_first() else {
        return Err(invalid(&option.name, DIRECTIVE, "disable: missing class"));
    };
    let zones = zones(DIRECTIVE, option, names, &[Name::root()])?;
    match which.text.as_str() {
        "success" => config.disable_success = zones,
        "denial" => config.disable_denial = zones,
        other => {
            return Err(bad_value(
                DIRECTIVE,
                option,
                which,
                &format!("cache type for disable must be \"success\" or \"denial\", not '{other}'"),
            ));
        }
    }
    Ok(())
}

/// `prefetch AMOUNT [DURATION [PERCENTAGE%]]`; `None` for an amount of 0.
fn prefetch(option: &Line) -> Result<Option<Prefetch>, Error> {
    let args = arguments(DIRECTIVE, option, 1, Some(3))?;
    let Some(amount_arg) = args.first() else {
        return Err(invalid(&option.name, DIRECTIVE, "prefetch: missing AMOUNT"));
    };
    let amount = amount_arg.text.parse::<u32>().map_err(|_| {
        bad_value(
            DIRECTIVE,
            option,
            amount_arg,
            &format!(
                "AMOUNT '{}' must be a non-negative integer",
                amount_arg.text
            ),
        )
    })?;
    let mut prefetch = Prefetch {
        amount,
        duration: DEFAULT_PREFETCH_DURATION,
        percentage: DEFAULT_PREFETCH_PERCENTAGE,
    };
    if let Some(arg) = args.get(1) {
        prefetch.duration = duration(DIRECTIVE, option, arg)?;
    }
    if let Some(arg) = args.get(2) {
        let Some(number) = arg.text.strip_suffix('%') else {
            return Err(bad_value(
                DIRECTIVE,
                option,
                arg,
                &format!("PERCENTAGE '{}' must end with '%' (such as 10%)", arg.text),
            ));
        };
        prefetch.percentage = number
            .parse::<u8>()
            .ok()
            .filter(|p| (10..=90).contains(p))
            .ok_or_else(|| {
                bad_value(
                    DIRECTIVE,
                    option,
                    arg,
                    &format!("percentage '{}' should fall in range [10, 90]", arg.text),
                )
            })?;
    }
    Ok((amount > 0).then_some(prefetch))
}

/// `serve_stale [DURATION [immediate|verify]]`.
fn serve_stale(option: &Line) -> Result<ServeStale, Error> {
    let args = arguments(DIRECTIVE, option, 0, Some(2))?;
    let mut stale = ServeStale {
        duration: DEFAULT_STALE,
        verified: false,
    };
    if let Some(arg) = args.first() {
        stale.duration = duration(DIRECTIVE, option, arg)?;
    }
    if let Some(arg) = args.get(1) {
        stale.verified = match arg.text.to_ascii_lowercase().as_str() {
            "immediate" => false,
            "verify" => true,
            other => {
                let hint = if other == "verified" {
                    " (CoreDNS spells it 'verify')"
                } else {
                    ""
                };
                return Err(bad_value(
                    DIRECTIVE,
                    option,
                    arg,
                    &format!(
                        "invalid value for serve_stale refresh mode: '{}' (expected immediate \
                         or verify){hint}",
                        arg.text
                    ),
                ));
            }
        };
    }
    Ok(stale)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::ServerBlock;
    use crate::config::test_support::{Invalid, Valid, block, check_invalid, check_valid, names};

    fn cache(server: &ServerBlock) -> &CacheConfig {
        server.plugins.cache.as_ref().unwrap()
    }

    fn class(capacity: usize, max_ttl: u32, min_ttl: u32) -> CacheClass {
        CacheClass {
            capacity,
            max_ttl,
            min_ttl,
        }
    }

    #[test]
    fn defaults() {
        let server = block(" cache").unwrap();
        let want = CacheConfig {
            zones: vec![Name::root()],
            success: class(9984, 3600, 5),
            denial: class(9984, 1800, 5),
            disable_success: vec![],
            disable_denial: vec![],
            prefetch: None,
            serve_stale: None,
            servfail: Duration::from_secs(5),
            keepttl: false,
        };
        assert_eq!(server.plugins.cache, Some(want));
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("ttl", " cache 30", |s| {
                cache(s).success == class(9984, 30, 5) && cache(s).denial == class(9984, 30, 5)
            }),
            ("zones", " cache example.org 10.0.0.0/8", |s| {
                names(&cache(s).zones) == ["example.org.", "10.in-addr.arpa."]
            }),
            ("ttl and zones", " cache 10 Example.org", |s| {
                cache(s).success.max_ttl == 10 && names(&cache(s).zones) == ["example.org."]
            }),
            ("success", " cache {\n  success 5000\n }", |s| {
                cache(s).success == class(4864, 3600, 5) && cache(s).denial == class(9984, 1800, 5)
            }),
            ("success ttl", " cache 30 {\n  success 5000 60\n }", |s| {
                cache(s).success == class(4864, 60, 5) && cache(s).denial.max_ttl == 30
            }),
            ("success minttl", " cache {\n  success 5000 60 0\n }", |s| {
                cache(s).success == class(4864, 60, 0)
            }),
            ("denial", " cache {\n  denial 2500 5 1\n }", |s| {
                cache(s).denial == class(2304, 5, 1)
            }),
            (
                "capacity minimum",
                " cache {\n  success 100\n  denial 0\n }",
                |s| cache(s).success.capacity == 1024 && cache(s).denial.capacity == 1024,
            ),
            ("capacity negative", " cache {\n  success -1\n }", |s| {
                cache(s).success.capacity == 1024
            }),
            (
                "disable",
                " cache 30 {\n  disable success cluster.local\n  disable denial cluster.local example.org\n }",
                |s| {
                    names(&cache(s).disable_success) == ["cluster.local."]
                        && names(&cache(s).disable_denial) == ["cluster.local.", "example.org."]
                },
            ),
            (
                "disable everything",
                " cache {\n  disable denial\n }",
                |s| names(&cache(s).disable_denial) == ["."] && cache(s).disable_success.is_empty(),
            ),
            (
                "disable replaces",
                " cache {\n  disable success a.org\n  disable success b.org\n }",
                |s| names(&cache(s).disable_success) == ["b.org."],
            ),
            ("prefetch", " cache {\n  prefetch 10\n }", |s| {
                cache(s).prefetch
                    == Some(Prefetch {
                        amount: 10,
                        duration: Duration::from_secs(60),
                        percentage: 10,
                    })
            }),
            ("prefetch duration", " cache {\n  prefetch 2 10m\n }", |s| {
                cache(s)
                    .prefetch
                    .is_some_and(|p| p.duration == Duration::from_secs(600))
            }),
            (
                "prefetch percentage",
                " cache {\n  prefetch 2 10m 90%\n }",
                |s| {
                    cache(s)
                        .prefetch
                        .is_some_and(|p| p.percentage == 90 && p.amount == 2)
                },
            ),
            ("prefetch zero", " cache {\n  prefetch 0\n }", |s| {
                cache(s).prefetch.is_none()
            }),
            ("serve_stale", " cache {\n  serve_stale\n }", |s| {
                cache(s).serve_stale
                    == Some(ServeStale {
                        duration: Duration::from_secs(3600),
                        verified: false,
                    })
            }),
            (
                "serve_stale duration",
                " cache {\n  serve_stale 10m\n }",
                |s| {
                    cache(s)
                        .serve_stale
                        .is_some_and(|st| st.duration == Duration::from_secs(600))
                },
            ),
            (
                "serve_stale immediate",
                " cache {\n  serve_stale 1h immediate\n }",
                |s| cache(s).serve_stale.is_some_and(|st| !st.verified),
            ),
            (
                "serve_stale verify",
                " cache {\n  serve_stale 1h VERIFY\n }",
                |s| cache(s).serve_stale.is_some_and(|st| st.verified),
            ),
            ("servfail", " cache {\n  servfail 10s\n }", |s| {
                cache(s).servfail == Duration::from_secs(10)
            }),
            ("servfail zero", " cache {\n  servfail 0\n }", |s| {
                cache(s).servfail.is_zero()
            }),
            ("servfail max", " cache {\n  servfail 5m\n }", |s| {
                cache(s).servfail == Duration::from_secs(300)
            }),
            ("keepttl", " cache {\n  keepttl\n }", |s| cache(s).keepttl),
            ("block zones", "", |s| s.plugins.cache.is_none()),
        ];
        check_valid(cases);
        // Zones default to the server block's keys.
        let config =
            crate::config::test_support::parse("example.org 10.0.0.0/24 {\n cache\n}").unwrap();
        assert_eq!(
            names(&config.servers[0].plugins.cache.as_ref().unwrap().zones),
            ["example.org.", "0.0.10.in-addr.arpa."]
        );
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "twice",
                input: " cache\n cache 30",
                line: 3,
                kind: "Invalid",
                message: "plugin/cache: this plugin can only be used once per Server Block (first at line 2)",
            },
            Invalid {
                name: "ttl zero",
                input: " cache 0",
                line: 2,
                kind: "Invalid",
                message: "cache: TTL '0' must be a positive number of seconds",
            },
            Invalid {
                name: "ttl negative",
                input: " cache -5",
                line: 2,
                kind: "Invalid",
                message: "TTL '-5'",
            },
            Invalid {
                name: "ttl too large",
                input: " cache 4294967296",
                line: 2,
                kind: "Invalid",
                message: "TTL '4294967296'",
            },
            Invalid {
                name: "bad zone",
                input: " cache exa%mple.org",
                line: 2,
                kind: "Invalid",
                message: "cache: zone 'exa%mple.org' has an invalid character",
            },
            Invalid {
                name: "unknown",
                input: " cache {\n  negative 5\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'negative' in cache",
            },
            Invalid {
                name: "option block",
                input: " cache {\n  keepttl {\n  }\n }",
                line: 3,
                kind: "Invalid",
                message: "keepttl: takes no '{ ... }' block",
            },
            Invalid {
                name: "success nothing",
                input: " cache {\n  success\n }",
                line: 3,
                kind: "Invalid",
                message: "success: expected 1 to 3 arguments, got 0",
            },
            Invalid {
                name: "success four",
                input: " cache {\n  success 1 2 3 4\n }",
                line: 3,
                kind: "Invalid",
                message: "expected 1 to 3 arguments, got 4",
            },
            Invalid {
                name: "success capacity",
                input: " cache {\n  success many\n }",
                line: 3,
                kind: "Invalid",
                message: "success: CAPACITY 'many' is not an integer",
            },
            Invalid {
                name: "success ttl zero",
                input: " cache {\n  success 5000 0\n }",
                line: 3,
                kind: "Invalid",
                message: "success: TTL '0' must be a positive number",
            },
            Invalid {
                name: "success minttl negative",
                input: " cache {\n  success 5000 60 -1\n }",
                line: 3,
                kind: "Invalid",
                message: "MINTTL '-1' must be a non-negative number",
            },
            Invalid {
                name: "denial ttl",
                input: " cache {\n  denial 5000 x\n }",
                line: 3,
                kind: "Invalid",
                message: "denial: TTL 'x'",
            },
            Invalid {
                name: "disable nothing",
                input: " cache {\n  disable\n }",
                line: 3,
                kind: "Invalid",
                message: "disable: expected at least 1 argument",
            },
            Invalid {
                name: "disable class",
                input: " cache {\n  disable positive a.org\n }",
                line: 3,
                kind: "Invalid",
                message: "cache type for disable must be \"success\" or \"denial\"",
            },
            Invalid {
                name: "disable zone",
                input: " cache {\n  disable success a..org\n }",
                line: 3,
                kind: "Invalid",
                message: "empty label",
            },
            Invalid {
                name: "prefetch nothing",
                input: " cache {\n  prefetch\n }",
                line: 3,
                kind: "Invalid",
                message: "prefetch: expected 1 to 3 arguments, got 0",
            },
            Invalid {
                name: "prefetch amount",
                input: " cache {\n  prefetch -1\n }",
                line: 3,
                kind: "Invalid",
                message: "prefetch: AMOUNT '-1' must be a non-negative integer",
            },
            Invalid {
                name: "prefetch duration",
                input: " cache {\n  prefetch 1 10\n }",
                line: 3,
                kind: "Invalid",
                message: "missing unit",
            },
            Invalid {
                name: "prefetch percent sign",
                input: " cache {\n  prefetch 1 1m 10\n }",
                line: 3,
                kind: "Invalid",
                message: "PERCENTAGE '10' must end with '%'",
            },
            Invalid {
                name: "prefetch percent low",
                input: " cache {\n  prefetch 1 1m 9%\n }",
                line: 3,
                kind: "Invalid",
                message: "percentage '9%' should fall in range [10, 90]",
            },
            Invalid {
                name: "prefetch percent high",
                input: " cache {\n  prefetch 1 1m 91%\n }",
                line: 3,
                kind: "Invalid",
                message: "[10, 90]",
            },
            Invalid {
                name: "prefetch percent word",
                input: " cache {\n  prefetch 1 1m x%\n }",
                line: 3,
                kind: "Invalid",
                message: "[10, 90]",
            },
            Invalid {
                name: "serve_stale three",
                input: " cache {\n  serve_stale 1h verify x\n }",
                line: 3,
                kind: "Invalid",
                message: "serve_stale: expected at most 2 arguments, got 3",
            },
            Invalid {
                name: "serve_stale duration",
                input: " cache {\n  serve_stale -1h\n }",
                line: 3,
                kind: "Invalid",
                message: "must not be negative",
            },
            Invalid {
                name: "serve_stale mode",
                input: " cache {\n  serve_stale 1h later\n }",
                line: 3,
                kind: "Invalid",
                message: "invalid value for serve_stale refresh mode: 'later'",
            },
            Invalid {
                name: "serve_stale verified",
                input: " cache {\n  serve_stale 1h verified\n }",
                line: 3,
                kind: "Invalid",
                message: "CoreDNS spells it 'verify'",
            },
            Invalid {
                name: "servfail nothing",
                input: " cache {\n  servfail\n }",
                line: 3,
                kind: "Invalid",
                message: "servfail: expected exactly 1 argument",
            },
            Invalid {
                name: "servfail over",
                input: " cache {\n  servfail 301s\n }",
                line: 3,
                kind: "Invalid",
                message: "caching SERVFAIL responses over 5 minutes is not permitted",
            },
            Invalid {
                name: "keepttl argument",
                input: " cache {\n  keepttl yes\n }",
                line: 3,
                kind: "Invalid",
                message: "keepttl: expected exactly 0 arguments",
            },
        ];
        check_invalid(cases);
    }

    #[test]
    fn capacities() {
        let cases = [
            ("default", 9984, 9984),
            ("round down", 10000, 9984),
            ("exact", 2048, 2048),
            ("below minimum", 1000, 1024),
            ("one shard", 256, 1024),
            ("zero", 0, 1024),
            ("negative", -5, 1024),
            (
                "huge",
                i64::MAX,
                usize::try_from(i64::MAX / 256)
                    .unwrap_or(usize::MAX)
                    .saturating_mul(256),
            ),
        ];
        for (name, requested, want) in cases {
            assert_eq!(shard_capacity(requested), want, "{name}");
        }
    }

    #[test]
    fn integers() {
        assert!(is_integer("30") && is_integer("-1") && is_integer("+5"));
        assert!(
            !is_integer("example.org") && !is_integer("") && !is_integer("-") && !is_integer("1e3")
        );
    }
}
