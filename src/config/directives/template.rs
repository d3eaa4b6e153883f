//! `template CLASS TYPE [ZONES...] { match REGEX...; answer RR...; additional RR...;
//! authority RR...; rcode CODE; ederror CODE [REASON]; fallthrough [ZONES...] }`
//!
//! As CoreDNS's *template*: CLASS (`IN`, `CH`, `HS`, `CS`, `NONE`, `ANY`) and TYPE (`A`,
//! `PTR`, ... or `ANY`) select the questions; ZONES default to the server block's. `match`
//! takes Go regular expressions (the `regex` crate's syntax, which RE2's is; at most 10,000
//! characters each; default `.*`), matched against the query name in lower case with its
//! final dot. `answer`, `additional` and `authority` take one or more RR templates, each a
//! Go template ([`crate::gotemplate`]) that must give an RR in zone-file syntax. `rcode`
//! defaults to NOERROR; `ederror` adds an Extended DNS Error (RFC 8914). `upstream` is
//! accepted and ignored, as CoreDNS does. A block may have several `template` lines; they
//! are tried in file order.

use hickory_proto::rr::Name;

use super::{Context, arguments, bad_value, invalid, no_block, number, unknown_property, zones};
use crate::codes::{class, rcode, rtype};
use crate::config::error::Error;
use crate::config::syntax::Line;
use crate::gotemplate::Template;

const DIRECTIVE: &str = "template";

/// The longest `match` pattern (CoreDNS's `maxRegexpLen`).
const MAX_REGEX_LEN: usize = 10_000;

/// One *template* directive.
#[derive(Debug, Clone)]
pub struct TemplateConfig {
    /// CLASS (255 for ANY).
    pub class: u16,
    /// TYPE (255 for ANY).
    pub qtype: u16,
    /// The zones it answers in (the server block's when none are given).
    pub zones: Vec<Name>,
    /// `match`, in order (`.*` when none is given).
    pub regex: Vec<regex::Regex>,
    /// `answer` RR templates.
    pub answer: Vec<Template>,
    /// `additional` RR templates.
    pub additional: Vec<Template>,
    /// `authority` RR templates.
    pub authority: Vec<Template>,
    /// `rcode` (default NOERROR).
    pub rcode: u16,
    /// `ederror CODE [REASON]`.
    pub ederror: Option<(u16, String)>,
    /// `fallthrough [ZONES...]`: `None` when absent; an empty list means every zone.
    pub fallthrough: Option<Vec<Name>>,
    /// Line of the directive.
    pub line: usize,
}

impl PartialEq for TemplateConfig {
    fn eq(&self, other: &Self) -> bool {
        let patterns = |config: &Self| -> Vec<String> {
            config.regex.iter().map(|r| r.as_str().to_owned()).collect()
        };
        self.class == other.class
            && self.qtype == other.qtype
            && self.zones == other.zones
            && patterns(self) == patterns(other)
            && self.answer == other.answer
            && self.additional == other.additional
            && self.authority == other.authority
            && self.rcode == other.rcode
            && self.ederror == other.ederror
            && self.fallthrough == other.fallthrough
            && self.line == other.line
    }
}

/// Parses one `template` line.
pub(crate) fn parse(line: &Line, context: &Context<'_>) -> Result<TemplateConfig, Error> {
    let args = arguments(DIRECTIVE, line, 2, None)?;
    let class = class::by_name(&args[0].text).ok_or_else(|| {
        bad_value(
            DIRECTIVE,
            line,
            &args[0],
            &format!("invalid query class {}", args[0].text),
        )
    })?;
    let qtype = rtype::by_name(&args[1].text).ok_or_else(|| {
        bad_value(
            DIRECTIVE,
            line,
            &args[1],
            &format!("invalid RR class {}", args[1].text),
        )
    })?;
    let zones = zones(DIRECTIVE, line, &args[2..], context.block_zones)?;
    let mut config = TemplateConfig {
        class,
        qtype,
        zones,
        regex: Vec::new(),
        answer: Vec::new(),
        additional: Vec::new(),
        authority: Vec::new(),
        rcode: 0,
        ederror: None,
        fallthrough: None,
        line: line.name.line,
    };
    for option in line.options() {
        no_block(DIRECTIVE, option)?;
        match option.name() {
            "match" => {
                for arg in arguments(DIRECTIVE, option, 1, None)? {
                    if arg.text.len() > MAX_REGEX_LEN {
                        return Err(bad_value(
                            DIRECTIVE,
                            option,
                            arg,
                            &format!(
                                "regex pattern too long: {} > {MAX_REGEX_LEN}",
                                arg.text.len()
                            ),
                        ));
                    }
                    let regex = regex::Regex::new(&arg.text).map_err(|error| {
                        bad_value(
                            DIRECTIVE,
                            option,
                            arg,
                            &format!("could not parse regex: {}, {error}", arg.text),
                        )
                    })?;
                    config.regex.push(regex);
                }
            }
            section @ ("answer" | "additional" | "authority") => {
                let mut templates = Vec::new();
                for arg in arguments(DIRECTIVE, option, 1, None)? {
                    let template = Template::parse(&arg.text).map_err(|error| {
                        bad_value(
                            DIRECTIVE,
                            option,
                            arg,
                            &format!(
                                "could not compile template: {}, template: {section}:1: {error}",
                                arg.text
                            ),
                        )
                    })?;
                    templates.push(template);
                }
                match section {
                    "answer" => config.answer.extend(templates),
                    "additional" => config.additional.extend(templates),
                    _ => config.authority.extend(templates),
                }
            }
            "rcode" => {
                let [arg] = arguments(DIRECTIVE, option, 1, Some(1))? else {
                    return Err(invalid(&option.name, DIRECTIVE, "rcode: missing argument"));
                };
                config.rcode = rcode::by_name(&arg.text).ok_or_else(|| {
                    bad_value(
                        DIRECTIVE,
                        option,
                        arg,
                        &format!("unknown rcode {}", arg.text),
                    )
                })?;
            }
            "ederror" => {
                let args = arguments(DIRECTIVE, option, 1, Some(2))?;
                let code: u16 = number(DIRECTIVE, option, &args[0])?;
                let reason = args.get(1).map(|r| r.text.clone()).unwrap_or_default();
                config.ederror = Some((code, reason));
            }
            "fallthrough" => {
                config.fallthrough = Some(super::zones(DIRECTIVE, option, &option.args, &[])?);
            }
            // "remove soon", CoreDNS says; accepted and ignored there too.
            "upstream" => {}
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    if config.regex.is_empty() {
        config.regex.push(
            regex::Regex::new(".*").map_err(|error| {
                invalid(&line.name, DIRECTIVE, format!("internal regex: {error}"))
            })?,
        );
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid, names};

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            (
                "nxdomain everything",
                " template ANY ANY {\n  rcode NXDOMAIN\n }",
                |s| {
                    s.plugins.template.len() == 1 && {
                        let t = &s.plugins.template[0];
                        t.class == 255
                            && t.qtype == 255
                            && names(&t.zones) == ["."]
                            && t.regex.len() == 1
                            && t.regex[0].as_str() == ".*"
                            && t.rcode == 3
                            && t.answer.is_empty()
                            && t.fallthrough.is_none()
                            && t.line == 2
                    }
                },
            ),
            (
                "aks",
                " template ANY ANY internal.cloudapp.net {\n  match \"^(?:[^.]+\\.){4,}internal\\.cloudapp\\.net\\.$\"\n  rcode NXDOMAIN\n  fallthrough\n }\n template ANY ANY reddog.microsoft.com {\n  rcode NXDOMAIN\n }",
                |s| {
                    s.plugins.template.len() == 2
                        && names(&s.plugins.template[0].zones) == ["internal.cloudapp.net."]
                        && s.plugins.template[0].regex[0].as_str()
                            == "^(?:[^.]+\\.){4,}internal\\.cloudapp\\.net\\.$"
                        && s.plugins.template[0].fallthrough == Some(vec![])
                        && names(&s.plugins.template[1].zones) == ["reddog.microsoft.com."]
                        && s.plugins.template[1].line == 7
                },
            ),
            (
                "answers",
                " template IN A example {\n  match (^|[.])ip-(?P<a>[0-9]*)-(?P<b>[0-9]*)[.]example[.]$\n  answer \"{{ .Name }} 60 IN A 10.0.{{ .Group.a }}.{{ .Group.b }}\"\n  additional \"ns.example. 60 IN A 10.0.0.1\" \"ns.example. 60 IN AAAA ::1\"\n  authority \"example. 60 IN NS ns.example.\"\n  ederror 21 \"Blocked\"\n  upstream\n  fallthrough in-addr.arpa\n }",
                |s| {
                    let t = &s.plugins.template[0];
                    t.class == 1
                        && t.qtype == 1
                        && t.answer.len() == 1
                        && t.additional.len() == 2
                        && t.authority.len() == 1
                        && t.ederror == Some((21, "Blocked".to_owned()))
                        && t.fallthrough
                            .as_deref()
                            .is_some_and(|z| names(z) == ["in-addr.arpa."])
                },
            ),
            (
                "several matches",
                " template IN A {\n  match a b\n  match c\n }",
                |s| s.plugins.template[0].regex.len() == 3,
            ),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "no type",
                input: " template IN",
                line: 2,
                kind: "Invalid",
                message: "template: expected at least 2 arguments, got 1",
            },
            Invalid {
                name: "class",
                input: " template XX A",
                line: 2,
                kind: "Invalid",
                message: "template: invalid query class XX",
            },
            Invalid {
                name: "type",
                input: " template IN AAA",
                line: 2,
                kind: "Invalid",
                message: "template: invalid RR class AAA",
            },
            Invalid {
                name: "regex",
                input: " template IN A {\n  match ([a-z\n }",
                line: 3,
                kind: "Invalid",
                message: "template: match: could not parse regex: ([a-z",
            },
            Invalid {
                name: "template",
                input: " template IN A {\n  answer \"{{ .Nmae }} 60 IN A 10.0.0.1\"\n }",
                line: 3,
                kind: "Invalid",
                message: "could not compile template: {{ .Nmae }} 60 IN A 10.0.0.1, template: answer:1: can't evaluate field Nmae",
            },
            Invalid {
                name: "function",
                input: " template IN A {\n  answer \"{{ upper .Name }} 60 IN A 10.0.0.1\"\n }",
                line: 3,
                kind: "Invalid",
                message: "function \"upper\" not defined",
            },
            Invalid {
                name: "rcode",
                input: " template IN A {\n  rcode NOPE\n }",
                line: 3,
                kind: "Invalid",
                message: "template: rcode: unknown rcode NOPE",
            },
            Invalid {
                name: "rcode count",
                input: " template IN A {\n  rcode NXDOMAIN NOERROR\n }",
                line: 3,
                kind: "Invalid",
                message: "rcode: expected exactly 1 argument, got 2",
            },
            Invalid {
                name: "ederror",
                input: " template IN A {\n  ederror x\n }",
                line: 3,
                kind: "Invalid",
                message: "ederror: 'x' is not a non-negative integer",
            },
            Invalid {
                name: "empty answer",
                input: " template IN A {\n  answer\n }",
                line: 3,
                kind: "Invalid",
                message: "answer: expected at least 1 argument, got 0",
            },
            Invalid {
                name: "option",
                input: " template IN A {\n  ttl 5\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'ttl' in template",
            },
        ];
        check_invalid(cases);
    }
}
