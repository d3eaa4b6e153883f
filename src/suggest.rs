//! "Did you mean": the known word nearest to a misspelt one, for errors that name what the
//! user typed (a context, a directive, a namespace ...).

/// The word of `known` nearest to `typed`, when one is near enough to be what was meant:
/// at most a third of its letters apart (at least one) by edit distance (a swap of two
/// neighbours is one edit, `wbe` for `web`), or alike by
/// Jaro-Winkler (0.88 and up: a word cut short or its end misspelt, `fallthru`), ignoring
/// case; the most alike of those. `None` when `typed` is itself known.
pub fn closest<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed_lower = typed.to_lowercase();
    let limit = (typed.chars().count() / 3).max(1);
    let mut best: Option<(f64, &'a str)> = None;
    for word in known {
        if word == typed {
            return None;
        }
        let word_lower = word.to_lowercase();
        let alike = strsim::jaro_winkler(&typed_lower, &word_lower);
        let near = strsim::osa_distance(&typed_lower, &word_lower) <= limit || alike >= 0.88;
        if near && best.is_none_or(|(most, _)| alike > most) {
            best = Some((alike, word));
        }
    }
    best.map(|(_, word)| word)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn near_words_are_suggested_and_far_ones_are_not() {
        let directives = ["loadbalance", "loop", "log", "kubernetes"];
        assert_eq!(closest("loadbalence", directives), Some("loadbalance"));
        assert_eq!(closest("kubernets", directives), Some("kubernetes"));
        assert_eq!(closest("lop", directives), Some("loop"));
        assert_eq!(closest("wbe", ["web", "db"]), Some("web"));
        assert_eq!(
            closest("fallthru", ["fallthrough", "ttl"]),
            Some("fallthrough")
        );
        assert_eq!(closest("forward", directives), None);
        assert_eq!(closest("loop", directives), None);
        assert_eq!(
            closest("KIND-kind", ["kind-kind", "prod"]),
            Some("kind-kind")
        );
        assert_eq!(closest("x", ["prod"]), None);
        assert_eq!(closest("anything", std::iter::empty()), None);
    }
}
