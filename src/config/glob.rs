//! File globs for `import`: `*` and `?` in any path component, as Go's `filepath.Glob` (which
//! CoreDNS uses) has them. Character classes (`[...]`) are refused, as CoreDNS refuses them.

use std::path::{Component, Path, PathBuf};

/// More matches than this is an error (a Corefile never needs that many files).
const MAX_MATCHES: usize = 1000;

/// Whether `pattern` holds a wildcard.
pub(crate) fn has_wildcards(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', ']'])
}

/// The existing paths matching `pattern`, sorted within each directory.
pub(crate) fn glob(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let mut candidates = vec![PathBuf::new()];
    for component in pattern.components() {
        let Component::Normal(part) = component else {
            for candidate in &mut candidates {
                candidate.push(component.as_os_str());
            }
            continue;
        };
        let Some(part) = part.to_str().filter(|part| has_wildcards(part)) else {
            for candidate in &mut candidates {
                candidate.push(part);
            }
            continue;
        };
        if part.contains(['[', ']']) {
            return Err(format!(
                "import pattern {} uses a character class ([...]), which is not supported",
                pattern.display()
            ));
        }
        let mut next = Vec::new();
        for candidate in &candidates {
            let directory = if candidate.as_os_str().is_empty() {
                Path::new(".")
            } else {
                candidate
            };
            let Ok(entries) = std::fs::read_dir(directory) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .filter(|name| matches(part, name))
                .collect();
            names.sort();
            next.extend(names.into_iter().map(|name| candidate.join(name)));
            if next.len() > MAX_MATCHES {
                return Err(format!(
                    "import pattern {} matches more than {MAX_MATCHES} files",
                    pattern.display()
                ));
            }
        }
        candidates = next;
    }
    candidates.retain(|candidate| candidate.symlink_metadata().is_ok());
    Ok(candidates)
}

/// Whether `name` matches `pattern` (`*`: any run of characters, `?`: any one character).
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_matching() {
        let cases = [
            ("star", "*.conf", "a.conf", true),
            ("star empty", "*.conf", ".conf", true),
            ("star mismatch", "*.conf", "a.conf.bak", false),
            ("question", "a?.conf", "ab.conf", true),
            ("question needs one", "a?.conf", "a.conf", false),
            ("two stars", "*a*b", "xxaxxb", true),
            ("backtrack", "*ab", "aab", true),
            ("literal", "Corefile", "Corefile", true),
            ("literal mismatch", "Corefile", "Corefile2", false),
            ("only star", "*", "", true),
        ];
        for (name, pattern, text, want) in cases {
            assert_eq!(matches(pattern, text), want, "{name}");
        }
    }

    #[test]
    fn globbing_directories() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.conf", "a.conf", "c.txt"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/x.conf"), "").unwrap();

        let found = glob(&dir.path().join("*.conf")).unwrap();
        assert_eq!(
            found,
            vec![dir.path().join("a.conf"), dir.path().join("b.conf")]
        );
        let found = glob(&dir.path().join("s?b/*.conf")).unwrap();
        assert_eq!(found, vec![dir.path().join("sub/x.conf")]);
        assert!(glob(&dir.path().join("*.none")).unwrap().is_empty());
        assert!(glob(&dir.path().join("[ab].conf")).is_err());
    }
}
