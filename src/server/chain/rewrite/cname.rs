//! *rewrite*'s `cname` rule on the reply (CoreDNS `plugin/rewrite/cname_target.go`): the
//! first CNAME of the answer whose target the rule takes gets the new target, the answer
//! records after it are dropped, and the new target is asked through the server; its answers
//! follow (the handler does that asking, as a chase). The rcode and the other sections stay
//! the reply's.

use super::names::{dotted, rename};
use crate::config::NameMatcher;
use crate::codes::rtype;
use crate::name::WireName;
use crate::wire::{self, Edit, HEADER_LEN, Rebuilt, reply};

/// A `cname` rule, as the reply sees it.
#[derive(Debug, Clone)]
pub(crate) struct CnameTarget {
    pub(super) matcher: NameMatcher,
    pub(super) replacement: String,
}

impl CnameTarget {
    /// The new target of a CNAME to `target` (lower case, with its final dot), if the rule
    /// takes it (CoreDNS's `getFromAndToTarget`).
    fn new_target(&self, target: &str) -> Option<String> {
        rename(&self.matcher, &self.replacement, target)
    }

    /// `reply` with its answer cut after the first CNAME the rule takes, that CNAME's target
    /// replaced, and the new target (lower-case wire) to ask. `None` when the rule takes no
    /// CNAME of the reply (or makes a name that is not one).
    pub(crate) fn retarget(&self, message: &[u8]) -> Option<(Vec<u8>, WireName)> {
        let records = reply::records(message).ok()?;
        let (at, new) = records.iter().enumerate().find_map(|(at, record)| {
            if record.section != 1 || record.rtype != rtype::CNAME {
                return None;
            }
            let target = wire::name_at(message, wire::value_name_at(message, record)?)?;
            let new = self.new_target(&dotted(&target.to_ascii_lowercase())?)?;
            Some((at, WireName::from_dotted(&new).ok()?))
        })?;
        let question_end = reply::question_end(message).ok()?;
        let [questions, ..] = reply::counts(message).ok()?;
        let question = message.get(HEADER_LEN..question_end)?;
        let mut cut = Rebuilt::new(message, question, questions, message.len() + 64)?;
        for record in &records[..at] {
            cut.copy(message, record, 1)?;
        }
        let edit = Edit {
            value: Some(new.as_bytes()),
            ..Edit::default()
        };
        cut.copy_edited(message, &records[at], 1, &edit)?;
        for record in records.iter().filter(|record| record.section > 1) {
            cut.copy(message, record, record.section)?;
        }
        Some((cut.finish(), new.to_lowercase()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use hickory_proto::op::{Message, MessageType, OpCode};
    use hickory_proto::rr::rdata::{A, CNAME};
    use hickory_proto::rr::{Name, RData, Record};

    use super::*;

    fn name(text: &str) -> Name {
        Name::from_ascii(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// CoreDNS's README example: my-app.com -> my-app.example -> my-app.com.cdn.example.net
    /// -> its addresses.
    fn reply() -> Vec<u8> {
        let mut message = Message::new(7, MessageType::Response, OpCode::Query);
        let cname = |from: &str, to: &str| {
            Record::from_rdata(name(from), 200, RData::CNAME(CNAME(name(to))))
        };
        message.answers = vec![
            cname("my-app.com.", "my-app.example."),
            cname("my-app.example.", "my-app.com.cdn.example.net."),
            Record::from_rdata(
                name("my-app.com.cdn.example.net."),
                300,
                RData::A(A::new(192, 0, 2, 1)),
            ),
        ];
        message.to_vec().unwrap_or_default()
    }

    fn rule(matcher: NameMatcher, replacement: &str) -> CnameTarget {
        CnameTarget {
            matcher,
            replacement: replacement.to_owned(),
        }
    }

    #[test]
    fn targets() {
        let regex = |text: &str| NameMatcher::Regex(regex::Regex::new(text).unwrap());
        let cases = [
            (
                rule(regex("(.*).cdn.example.net."), "{1}.other.cdn.com."),
                Some("my-app.com.other.cdn.com."),
            ),
            (
                rule(
                    NameMatcher::Exact("my-app.com.cdn.example.net.".into()),
                    "edge.example.",
                ),
                Some("edge.example."),
            ),
            (
                rule(
                    NameMatcher::Suffix(".cdn.example.net.".into()),
                    ".alt.example.",
                ),
                Some("my-app.com.alt.example."),
            ),
            (
                rule(NameMatcher::Prefix("my-app.com.".into()), "x."),
                Some("x.cdn.example.net."),
            ),
            (
                rule(NameMatcher::Substring("cdn".into()), "origin"),
                Some("my-app.com.origin.example.net."),
            ),
            (
                rule(NameMatcher::Exact("nothing.example.".into()), "x."),
                None,
            ),
        ];
        for (rule, want) in cases {
            let found = rule.retarget(&reply());
            let Some(want) = want else {
                assert!(found.is_none(), "{rule:?}");
                continue;
            };
            let (bytes, target) = found.unwrap_or_else(|| panic!("{rule:?}"));
            assert_eq!(target.to_string(), want, "{rule:?}");
            let message = Message::from_vec(&bytes).unwrap();
            let answers: Vec<String> = message.answers.iter().map(ToString::to_string).collect();
            assert_eq!(
                answers,
                [
                    "my-app.com. 200 IN CNAME my-app.example.".to_owned(),
                    format!("my-app.example. 200 IN CNAME {want}"),
                ],
                "{rule:?}: the records after the retargeted CNAME are dropped"
            );
        }
    }
}
