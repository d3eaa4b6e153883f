//! The layering, kept: every path into another module that `src/` names (`use crate::…`,
//! `crate::…` and `super::…` paths, re-exports followed to where the item lives) is checked
//! against the table in `src/lib.rs`'s "Layers" section, and no two modules — top-level
//! modules, or the files of one module — may import each other, directly or round a loop.
//! A module that is a crate of its own (`crates/model`, `crates/kube-proxy`), re-exported by
//! `src/lib.rs` under its module's name (`pub use clusterdns_model as model;`), is read from
//! its `crates/*/src` as that module: its `crate::…` paths lead into it, and another crate's
//! name (`clusterdns_model::…`) to that crate's module.
//!
//! The plugins are named in one place, the registry in `src/plugin.rs`: no other source file
//! lists them.
//!
//! Test code (`#[cfg(test)]` items and the modules they declare) is left out: a unit test may
//! borrow a fixture from a layer above without the library depending on it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module path below the crate root: `["kube_proxy", "plan"]`.
type ModPath = Vec<String>;

/// One reference from a file to a module: where it is, for the failure message.
#[derive(Debug, Clone, PartialEq)]
struct Site {
    file: String,
    line: usize,
}

#[test]
fn imports_follow_the_layer_table_in_lib_rs() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crate_ = Crate::read(manifest);
    let table = Table::parse(&read(&manifest.join("src/lib.rs")));
    let mut failures = Vec::new();

    let declared: BTreeSet<&str> = crate_
        .modules
        .iter()
        .filter(|m| m.len() == 1)
        .map(|m| m[0].as_str())
        .collect();
    let listed: BTreeSet<&str> = table.rows.iter().map(|(m, _)| m.as_str()).collect();
    for missing in declared.difference(&listed) {
        failures.push(format!("module `{missing}` is not in lib.rs's layer table"));
    }
    for extra in listed.difference(&declared) {
        failures.push(format!(
            "lib.rs's layer table lists `{extra}`, which is no module"
        ));
    }
    for (index, (module, uses)) in table.rows.iter().enumerate() {
        for used in uses {
            if !table.rows[..index].iter().any(|(m, _)| m == used) {
                failures.push(format!(
                    "lib.rs's layer table: `{module}` uses `{used}`, which is not on a line above it"
                ));
            }
        }
    }

    let top = crate_.edges_below(&[]);
    for ((from, to), sites) in &top {
        if from == ROOT {
            continue; // lib.rs declares the modules
        }
        if !table.allows(from, to) {
            failures.push(format!(
                "`{from}` may not use `{to}` (lib.rs's layer table), but does at {}",
                list(sites)
            ));
        }
    }
    for (module, uses) in &table.rows {
        for used in uses {
            if !top.contains_key(&(module.clone(), used.clone())) {
                failures.push(format!(
                    "lib.rs's layer table says `{module}` uses `{used}`, but nothing in it does: \
                     take `{used}` off its line"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

#[test]
fn no_import_cycles_between_modules_or_the_files_of_one_module() {
    let crate_ = Crate::read(Path::new(env!("CARGO_MANIFEST_DIR")));
    let mut failures = Vec::new();

    // The one recursion allowed: a block's chain holds its steps (`Step`, in the root), and
    // a step is handed the chain and its block (`Ctx`) to run the rest of it (*autopath*'s
    // walk, a chase) or to be finished after its upstream (`Pending`). The types are one
    // recursion; its files may use each other, and no other file may join them.
    let recursion = "server::chain";
    let mut may_recurse: BTreeSet<String> = step_rows().into_iter().map(|(_, f, _)| f).collect();
    may_recurse.extend([ROOT, "block", "chase", "lifecycle"].map(String::from));
    let mut recursion_seen = false;

    let mut parents: Vec<ModPath> = vec![Vec::new()];
    parents.extend(crate_.modules.iter().cloned());
    for parent in &parents {
        let edges = crate_.edges_below(parent);
        for (members, cycle) in cycles(&edges) {
            if parent.join("::") == recursion {
                recursion_seen = true;
                let strangers: Vec<&String> = members
                    .iter()
                    .filter(|m| !may_recurse.contains(*m))
                    .collect();
                if strangers.is_empty() {
                    continue;
                }
                failures.push(format!(
                    "{strangers:?} joined the chain's recursion in `{recursion}`: only its root, \
                     the step plugins' modules, {:?} may use each other there",
                    ["block", "chase", "lifecycle"]
                ));
            }
            let mut described = Vec::new();
            for (index, from) in cycle.iter().enumerate() {
                let to = &cycle[(index + 1) % cycle.len()];
                let sites = &edges[&(from.clone(), to.clone())];
                described.push(format!(
                    "`{}` uses `{}` at {}",
                    qualify(parent, from),
                    qualify(parent, to),
                    list(sites)
                ));
            }
            let mut failure = format!("import cycle: {}", described.join("; "));
            if cycle.iter().any(|node| node == ROOT) {
                // Every use of the root by a child: what to move down into a file of its own.
                for ((from, to), sites) in &edges {
                    if to == ROOT && from != ROOT {
                        failure.push_str(&format!(
                            "\n    `{}` uses the root at {}",
                            qualify(parent, from),
                            list(sites)
                        ));
                    }
                }
            }
            failures.push(failure);
        }
    }
    if !recursion_seen {
        failures.push(format!(
            "`{recursion}` has no import cycle any more: take its allowance off this test"
        ));
    }
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

/// The plugins are listed once, in `src/plugin.rs`'s registry: a source file elsewhere that
/// names three or more directives as strings (a `match` on names, a list of them) is a second
/// list to keep in step, and fails. A file may name one or two (a sub-directive that shares a
/// plugin's name, a plugin's own messages).
#[test]
fn only_the_plugin_registry_lists_the_plugins() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let registry = read(&root.join("plugin.rs"));
    let directives: Vec<String> = registry
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let variant = words.next()?;
            let name = words.next()?;
            let role = words.next()?;
            (variant.starts_with(|c: char| c.is_ascii_uppercase())
                && name.len() > 2
                && name.starts_with('"')
                && name.ends_with('"')
                && matches!(role, "step" | "handler" | "setup"))
            .then(|| name.to_owned())
        })
        .collect();
    assert!(
        directives.len() > 20,
        "the registry's rows were not found in src/plugin.rs: {directives:?}"
    );
    let crate_ = Crate::read(Path::new(env!("CARGO_MANIFEST_DIR")));
    let mut failures = Vec::new();
    for (_, path, _) in &crate_.files {
        if path == "src/plugin.rs" {
            continue;
        }
        let raw = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join(path));
        let (code, _) = strip_tests(&raw);
        let code: String = code
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let named: Vec<&str> = directives
            .iter()
            .filter(|name| code.contains(name.as_str()))
            .map(String::as_str)
            .collect();
        if named.len() >= 3 {
            failures.push(format!(
                "{path} names the directives {}: ask crate::plugin::Plugin (name, from_name, ALL) \
                 instead of listing them again",
                named.join(", ")
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

/// The server reads and writes its messages with one codec, `src/wire/`: no file of the
/// serving path (the server, its plugins' engines, the wire itself) decodes or encodes a
/// whole message with hickory's `Message` (hickory's records stay the zone-file model of
/// *file*, *template* and zone transfers, written into our messages by `wire`). The tools
/// that act as a client (`explain`, the resolver simulator) and the zone's text rendering
/// may.
#[test]
fn the_serving_path_has_one_wire_codec() {
    let serving = [
        "server",
        "wire",
        "forward",
        "cache",
        "querylog",
        "node_cache",
    ];
    let crate_ = Crate::read(Path::new(env!("CARGO_MANIFEST_DIR")));
    let offenders: Vec<&str> = crate_
        .files
        .iter()
        .filter(|(module, _, _)| {
            module
                .first()
                .is_some_and(|m| serving.contains(&m.as_str()))
        })
        .filter(|(_, _, source)| {
            let flat: String = source.split_whitespace().collect();
            flat.contains("hickory_proto::op")
        })
        .map(|(_, path, _)| path.as_str())
        .collect();
    assert!(
        offenders.is_empty(),
        "{offenders:?} use hickory's Message on the serving path: read with wire::Request and \
         wire::reply, write with wire::Rebuilt, wire::QuestionAnswers or wire::write_*"
    );
}

/// One network-namespace helper for every test: only `tests/common/netns.rs` makes
/// namespaces (`unshare`, `ip netns add`); a test asks it for one.
#[test]
fn only_the_netns_helper_makes_namespaces() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut found = Vec::new();
    walk(&tests, &mut found);
    let helper = tests.join("common").join("netns.rs");
    let makers = ["\"unshare\"", "\"netns\", \"add\""];
    let offenders: Vec<String> = found
        .iter()
        .filter(|path| **path != helper)
        .filter(|path| {
            let source = read(path);
            makers.iter().any(|maker| source.contains(maker))
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        !found.is_empty() && read(&helper).contains(makers[0]),
        "the helper was not found where this test looks"
    );
    assert!(
        offenders.is_empty(),
        "{offenders:?} make network namespaces themselves: use tests/common/netns.rs (Netns, \
         in_fresh, unshared)"
    );
}

/// A step plugin is its registry row, its config file (`src/config/directives/FIELD.rs`),
/// its server module (`src/server/chain/FIELD.rs`), their folders, a library module of its
/// own (`src/FIELD/`: *cache*, *forward*) and its docs page: no other source file names it —
/// its modules, its configuration type or field, its `Plugin` or `Step` variant — except
/// where one plugin reads another's state or the server offers it to the tools, each listed
/// here with its reason. A new answering plugin needs no line anywhere else, and a new
/// coupling fails until it is listed. *kubernetes* is the product itself (the zone builder,
/// the sources and the tools read its configuration): the layer table governs who uses it.
#[test]
fn a_step_plugin_is_named_only_in_its_own_files() {
    /// (plugin field, file naming it, why).
    const COUPLINGS: &[(&str, &str, &str)] = &[
        (
            "autopath",
            "src/config/build.rs",
            "`autopath @kubernetes` needs the block's kubernetes",
        ),
        (
            "autopath",
            "src/config/mod.rs",
            "re-exports its option types",
        ),
        (
            "autopath",
            "src/server/chain.rs",
            "the chain says where autopath's walk starts",
        ),
        (
            "autopath",
            "src/server/handler.rs",
            "finishes a walk that went upstream",
        ),
        (
            "autopath",
            "src/server/chain/block.rs",
            "a query sent upstream carries the rest of the walk",
        ),
        (
            "autopath",
            "src/server/why.rs",
            "/debug/why explains a walk",
        ),
        ("cache", "src/config/mod.rs", "re-exports its option types"),
        (
            "cache",
            "src/server/chain/forward.rs",
            "forward looks up and stores where it goes upstream",
        ),
        (
            "cache",
            "src/server/handler.rs",
            "a stale answer (serve_stale verify) is cache's",
        ),
        (
            "cache",
            "src/server/why.rs",
            "/debug/why says what the cache holds",
        ),
        (
            "forward",
            "src/config/mod.rs",
            "re-exports its option types",
        ),
        (
            "forward",
            "src/config/shorthand.rs",
            "the shorthand Corefile's forward line",
        ),
        (
            "forward",
            "src/server/chain/autopath.rs",
            "the walk's names go upstream through forward",
        ),
        (
            "forward",
            "src/server/handler.rs",
            "finishes a query sent upstream",
        ),
        (
            "forward",
            "src/server/chain/block.rs",
            "Block::forwarders, for the tools",
        ),
        (
            "forward",
            "src/server/why.rs",
            "/debug/why names the upstreams",
        ),
        (
            "k8s_external",
            "src/config/build.rs",
            "its options join the block's kubernetes",
        ),
        (
            "k8s_external",
            "src/config/directives/kubernetes.rs",
            "its options join kubernetes's",
        ),
        (
            "k8s_external",
            "src/zone/external.rs",
            "its names are built with the cluster zone",
        ),
        (
            "loop_detect",
            "src/server/chain/forward.rs",
            "forward lets loop's own probe through",
        ),
        (
            "rewrite",
            "src/config/mod.rs",
            "re-exports its option types",
        ),
        (
            "rewrite",
            "src/server/chain.rs",
            "a query carries what rewrite turns back",
        ),
        (
            "rewrite",
            "src/server/chain/block.rs",
            "a query sent upstream carries what rewrite turns back",
        ),
        (
            "rewrite",
            "src/server/chain/chase.rs",
            "a chase carries what rewrite turns back",
        ),
        (
            "rewrite",
            "src/server/handler.rs",
            "every reply is turned back on its way out",
        ),
        (
            "rewrite",
            "src/server/why.rs",
            "/debug/why follows the rewritten question",
        ),
        (
            "template",
            "src/server/chain/chase.rs",
            "a template's CNAME is chased",
        ),
        (
            "transfer",
            "src/config/mod.rs",
            "re-exports its option types",
        ),
        (
            "transfer",
            "src/server/chain/block.rs",
            "resolve-cost's one-plugin block refuses transfers",
        ),
        (
            "transfer",
            "src/server/why.rs",
            "/debug/why explains a transfer",
        ),
    ];
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let steps = step_rows();
    let crate_ = Crate::read(manifest);
    let mut found: BTreeSet<(String, String)> = BTreeSet::new();
    for (module, path, source) in &crate_.files {
        if path == "src/plugin.rs" {
            continue;
        }
        let named_modules: BTreeSet<ModPath> = paths(source)
            .into_iter()
            .filter_map(|(_, p)| crate_.resolve(module, &p))
            .flatten()
            .collect();
        for (variant, field, config) in &steps {
            if field == "kubernetes" {
                continue; // the product itself: the layer table governs who reads it
            }
            let homes = [
                format!("src/config/directives/{field}"),
                format!("src/server/chain/{field}"),
                format!("src/{field}"),
            ];
            if homes
                .iter()
                .any(|home| path == &format!("{home}.rs") || path.starts_with(&format!("{home}/")))
            {
                continue;
            }
            let module_named = named_modules.iter().any(|m| {
                m.len() >= 3
                    && ((m[0] == "server" && m[1] == "chain")
                        || (m[0] == "config" && m[1] == "directives"))
                    && m[2] == *field
            });
            let words = [
                config.clone(),
                format!("Plugin::{variant}"),
                format!("Step::{variant}"),
                format!("plugins.{field}"),
                format!("chain::{field}"),
                format!("directives::{field}"),
            ];
            let word_named = words.iter().any(|word| contains_word(source, word));
            if module_named || word_named {
                found.insert((field.clone(), path.clone()));
            }
        }
    }
    let allowed: BTreeSet<(String, String)> = COUPLINGS
        .iter()
        .map(|(field, path, _)| ((*field).to_owned(), (*path).to_owned()))
        .collect();
    let unlisted: Vec<String> = found
        .difference(&allowed)
        .map(|(field, path)| format!("{path} names the plugin {field}"))
        .collect();
    let stale: Vec<String> = allowed
        .difference(&found)
        .map(|(field, path)| format!("{path} no longer names {field}: take it off COUPLINGS"))
        .collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "\n{}\n(a step plugin's server code belongs in src/server/chain/FIELD.rs, reached \
         through its Lifecycle; a real coupling between plugins is listed in COUPLINGS)\n",
        unlisted
            .iter()
            .chain(&stale)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The registry's `step` rows (`src/plugin.rs`): (variant, config field, config type).
fn step_rows() -> Vec<(String, String, String)> {
    let registry = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/plugin.rs"));
    let steps: Vec<(String, String, String)> = registry
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [variant, _, "step", field, _, config, ..] => Some((
                    (*variant).to_owned(),
                    (*field).to_owned(),
                    config.trim_end_matches(';').to_owned(),
                )),
                _ => None,
            }
        })
        .collect();
    assert!(
        steps.len() >= 15,
        "the registry's step rows were not found in src/plugin.rs: {steps:?}"
    );
    steps
}

/// Whether `source` has `word` not inside a longer identifier.
fn contains_word(source: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    source.match_indices(word).any(|(at, _)| {
        let before = source[..at].chars().next_back();
        let after = source[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The node of a module's root file among its children's in the cycle check.
const ROOT: &str = "(root)";

fn qualify(parent: &[String], child: &str) -> String {
    let mut path = parent.to_vec();
    if child != ROOT {
        path.push(child.to_string());
    } else if path.is_empty() {
        return "crate (lib.rs)".to_string();
    } else {
        return format!("{} (its root file)", path.join("::"));
    }
    path.join("::")
}

fn list(sites: &[Site]) -> String {
    let shown: Vec<String> = sites
        .iter()
        .take(3)
        .map(|s| format!("{}:{}", s.file, s.line))
        .collect();
    let more = sites.len().saturating_sub(3);
    if more > 0 {
        format!("{} (and {more} more)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The table in lib.rs: one line per module, `module  used, used, …` (or `-`), each module
/// using only modules on lines above it.
struct Table {
    rows: Vec<(String, Vec<String>)>,
}

impl Table {
    fn parse(lib_rs: &str) -> Self {
        let doc: Vec<&str> = lib_rs
            .lines()
            .map_while(|l| l.strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect();
        let start = doc
            .iter()
            .position(|l| l.trim() == "# Layers")
            .expect("lib.rs has a `# Layers` section");
        let header = doc[start..]
            .iter()
            .position(|l| l.split_whitespace().collect::<Vec<_>>() == ["module", "uses"])
            .expect("the Layers section has a `module  uses` table")
            + start;
        let mut rows = Vec::new();
        for line in &doc[header + 1..] {
            if line.starts_with("```") {
                break;
            }
            let mut words = line.split_whitespace();
            let Some(module) = words.next() else { continue };
            let rest: String = words.collect::<Vec<_>>().join(" ");
            let uses = if rest == "-" {
                Vec::new()
            } else {
                rest.split(',').map(|u| u.trim().to_string()).collect()
            };
            rows.push((module.to_string(), uses));
        }
        assert!(!rows.is_empty(), "lib.rs's layer table is empty");
        Table { rows }
    }

    fn allows(&self, from: &str, to: &str) -> bool {
        self.rows
            .iter()
            .any(|(m, uses)| m == from && uses.iter().any(|u| u == to))
    }
}

/// Every non-test source file of the library and of the crates it re-exports as its modules,
/// with the module paths it names.
struct Crate {
    /// The crates re-exported as modules: module name -> crate name (`model` ->
    /// `clusterdns_model`).
    members: BTreeMap<String, String>,
    /// Every module that has a file, test-only ones left out.
    modules: BTreeSet<ModPath>,
    /// (module, file relative to the manifest's directory, source with comments, strings and
    /// test code removed).
    files: Vec<(ModPath, String, String)>,
    /// `pub use` items: (module, name) -> where the name leads.
    reexports: BTreeMap<(ModPath, String), ModPath>,
}

impl Crate {
    /// The library in `manifest/src`, and each crate `src/lib.rs` re-exports as a module
    /// (`pub use clusterdns_model as model;`) from the `crates/*` whose package it is.
    fn read(manifest: &Path) -> Self {
        let members = members(manifest);
        let mut roots = vec![(manifest.join("src"), Vec::new())];
        for (module, dir) in members.values() {
            roots.push((dir.join("src"), vec![module.clone()]));
        }
        let mut modules = BTreeSet::new();
        let mut files = Vec::new();
        let mut test_only = BTreeSet::new();
        for (root, prefix) in roots {
            let mut found = Vec::new();
            walk(&root, &mut found);
            found.sort();
            for path in found {
                let relative = path.strip_prefix(&root).unwrap();
                let mut parts: Vec<String> = relative
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect();
                let file = parts.pop().unwrap();
                if prefix.is_empty() && parts.is_empty() && file == "main.rs" {
                    continue; // the binary: it uses the library from outside
                }
                let stem = file.trim_end_matches(".rs");
                if stem != "mod" && stem != "lib" {
                    parts.push(stem.to_string());
                }
                let parts = [prefix.clone(), parts].concat();
                let (source, tests) = clean(&read(&path));
                for name in tests {
                    let mut module = parts.clone();
                    module.push(name);
                    test_only.insert(module);
                }
                let shown = path.strip_prefix(manifest).unwrap().display().to_string();
                files.push((parts, shown, source));
            }
        }
        files.retain(|(module, _, _)| !test_only.iter().any(|t| module.starts_with(t)));
        for (module, _, _) in &files {
            if !module.is_empty() {
                modules.insert(module.clone());
            }
        }
        let mut crate_ = Crate {
            members: members
                .into_iter()
                .map(|(name, (module, _))| (module, name))
                .collect(),
            modules,
            files,
            reexports: BTreeMap::new(),
        };
        let mut reexports = BTreeMap::new();
        for (module, _, source) in &crate_.files {
            for statement in uses(source) {
                if !statement.public {
                    continue;
                }
                for (path, name) in statement.paths {
                    if let Some(resolved) = crate_.resolve(module, &path)
                        && let Some(target) = resolved.last()
                    {
                        reexports.insert((module.clone(), name), target.clone());
                    }
                }
            }
        }
        crate_.reexports = reexports;
        crate_
    }

    /// The modules a path passes through, the re-exports it goes by followed to their end;
    /// `None` for a path that leaves the crate.
    fn resolve(&self, module: &ModPath, path: &[String]) -> Option<Vec<ModPath>> {
        let mut current: ModPath;
        let mut rest = path;
        match path.first()?.as_str() {
            "crate" | "$crate" => {
                // A member crate's root is its module; the library's is the top.
                current = match module.first() {
                    Some(top) if self.members.contains_key(top) => vec![top.clone()],
                    _ => Vec::new(),
                };
                rest = &path[1..];
            }
            name if self.members.values().any(|crate_name| crate_name == name) => {
                let (module, _) = self.members.iter().find(|(_, c)| *c == name)?;
                current = vec![module.clone()];
                rest = &path[1..];
            }
            "self" => {
                current = module.clone();
                rest = &path[1..];
            }
            "super" => {
                current = module.clone();
                while rest.first().map(String::as_str) == Some("super") {
                    current.pop()?;
                    rest = &rest[1..];
                }
            }
            first => {
                let mut child = module.clone();
                child.push(first.to_string());
                if !self.modules.contains(&child) {
                    return None; // another crate, or a local item
                }
                current = module.clone();
            }
        }
        let mut visited = vec![current.clone()];
        let mut rest: Vec<String> = rest.to_vec();
        let mut hops = 0;
        while let Some(segment) = rest.first().cloned() {
            let mut next = current.clone();
            next.push(segment.clone());
            if self.modules.contains(&next) {
                current = next;
                visited.push(current.clone());
                rest.remove(0);
            } else if let Some(target) = self.reexports.get(&(current.clone(), segment)) {
                hops += 1;
                if hops > 16 || *target == current {
                    break;
                }
                current = target.clone();
                visited.push(current.clone());
                rest.remove(0);
            } else {
                break;
            }
        }
        Some(visited)
    }

    /// Edges between the children of `parent` and its root file (`mod.rs`, `lib.rs` or
    /// `NAME.rs` beside `NAME/`, the node [`ROOT`]): (from, to) -> the places that make it. A
    /// child uses the root when a path of it ends at an item the root defines (one the root
    /// only re-exports leads on to where it lives); the root uses a child by any path into it.
    fn edges_below(&self, parent: &[String]) -> BTreeMap<(String, String), Vec<Site>> {
        let mut edges: BTreeMap<(String, String), Vec<Site>> = BTreeMap::new();
        for (module, file, source) in &self.files {
            if module.len() < parent.len() || !module.starts_with(parent) {
                continue;
            }
            let from = module.get(parent.len()).map_or(ROOT, String::as_str);
            for (line, path) in paths(source) {
                let Some(visited) = self.resolve(module, &path) else {
                    continue;
                };
                let ends_in_root = visited.last().is_some_and(|end| end.as_slice() == parent);
                let targets = visited.iter().filter_map(|target| {
                    if target.len() > parent.len() && target.starts_with(parent) {
                        Some(target[parent.len()].as_str())
                    } else {
                        None
                    }
                });
                let targets: Vec<&str> = targets.chain(ends_in_root.then_some(ROOT)).collect();
                for to in targets {
                    if to == from {
                        continue;
                    }
                    let (from, to) = (from.to_string(), to.to_string());
                    let sites = edges.entry((from, to)).or_default();
                    let site = Site {
                        file: file.clone(),
                        line,
                    };
                    if sites.last() != Some(&site) {
                        sites.push(site);
                    }
                }
            }
        }
        edges
    }
}

/// The crates `src/lib.rs` re-exports as its modules: crate name -> (module, the crate's
/// directory under `crates/`, found by its package's name).
fn members(manifest: &Path) -> BTreeMap<String, (String, PathBuf)> {
    let lib = read(&manifest.join("src/lib.rs"));
    let mut packages = BTreeMap::new();
    for entry in fs::read_dir(manifest.join("crates")).into_iter().flatten() {
        let dir = entry.unwrap().path();
        let Ok(cargo_toml) = fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = cargo_toml
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = "))
            .map(|n| n.trim_matches('"').replace('-', "_"));
        if let Some(name) = name {
            packages.insert(name, dir);
        }
    }
    let mut members = BTreeMap::new();
    for line in lib.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["pub", "use", name, "as", module] = words.as_slice()
            && let Some(module) = module.strip_suffix(';')
            && let Some(dir) = packages.get(*name)
        {
            members.insert((*name).to_owned(), (module.to_owned(), dir.clone()));
        }
    }
    assert!(
        packages.keys().all(|name| members.contains_key(name)),
        "every crate of crates/ is re-exported by src/lib.rs as a module \
         (`pub use clusterdns_model as model;`): {packages:?}"
    );
    members
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The graph's strongly connected components of more than one node, each with one cycle
/// through it (the shortest from its first node) to show.
fn cycles(edges: &BTreeMap<(String, String), Vec<Site>>) -> Vec<(Vec<String>, Vec<String>)> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
        next.entry(to).or_default();
    }
    let reach = |start: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(node) = stack.pop() {
            for &n in &next[node] {
                if seen.insert(n) {
                    stack.push(n);
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&str, BTreeSet<&str>> = next.keys().map(|&n| (n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for &node in next.keys() {
        if done.contains(node) || !reachable[node].contains(node) {
            continue;
        }
        let component: BTreeSet<&str> = reachable[node]
            .iter()
            .copied()
            .filter(|n| reachable[n].contains(node))
            .collect();
        done.extend(component.iter().copied());
        // One cycle through `node`, by the shortest way back, for the message.
        let mut back: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([node]);
        'search: while let Some(at) = queue.pop_front() {
            for &n in &next[at] {
                if n == node {
                    let mut cycle = vec![at.to_string()];
                    let mut step = at;
                    while step != node {
                        step = back[step];
                        cycle.push(step.to_string());
                    }
                    cycle.reverse();
                    let members = component.iter().map(|m| m.to_string()).collect();
                    found.push((members, cycle));
                    break 'search;
                }
                if component.contains(n) && !back.contains_key(n) && n != node {
                    back.insert(n, at);
                    queue.push_back(n);
                }
            }
        }
    }
    found
}

/// One `use` statement: its paths, each with the name it brings in.
struct Use {
    public: bool,
    paths: Vec<(Vec<String>, String)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Colons,
    Punct(char),
}

fn tokens(source: &str) -> Vec<(usize, Token)> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            out.push((line, Token::Word(chars[start..i].iter().collect())));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push((line, Token::Colons));
            i += 2;
        } else {
            out.push((line, Token::Punct(c)));
            i += 1;
        }
    }
    out
}

/// The `use` statements of a cleaned source.
fn uses(source: &str) -> Vec<Use> {
    let tokens = tokens(source);
    let mut found = Vec::new();
    for (index, (_, token)) in tokens.iter().enumerate() {
        if *token != Token::Word("use".into()) {
            continue;
        }
        let public = index > 0
            && (tokens[index - 1].1 == Token::Word("pub".into())
                || tokens[index - 1].1 == Token::Punct(')'));
        let mut position = index + 1;
        let mut paths = Vec::new();
        use_tree(&tokens, &mut position, Vec::new(), &mut paths);
        found.push(Use { public, paths });
    }
    found
}

/// Reads one use tree (`a::b::{c, d::e as f, self}`) from `position`, adding each path.
fn use_tree(
    tokens: &[(usize, Token)],
    position: &mut usize,
    mut prefix: Vec<String>,
    paths: &mut Vec<(Vec<String>, String)>,
) {
    loop {
        match tokens.get(*position).map(|t| &t.1) {
            Some(Token::Word(word)) if word == "self" && !prefix.is_empty() => {
                *position += 1;
                let name = prefix.last().cloned().unwrap_or_default();
                paths.push((prefix.clone(), alias(tokens, position).unwrap_or(name)));
                return;
            }
            Some(Token::Word(word)) => {
                prefix.push(word.clone());
                *position += 1;
                if tokens.get(*position).map(|t| &t.1) == Some(&Token::Colons) {
                    *position += 1;
                    continue;
                }
                let name = alias(tokens, position).unwrap_or_else(|| word.clone());
                paths.push((prefix, name));
                return;
            }
            Some(Token::Punct('{')) => {
                *position += 1;
                loop {
                    match tokens.get(*position).map(|t| &t.1) {
                        Some(Token::Punct('}')) | None => {
                            *position += 1;
                            return;
                        }
                        Some(Token::Punct(',')) => *position += 1,
                        _ => use_tree(tokens, position, prefix.clone(), paths),
                    }
                }
            }
            Some(Token::Punct('*')) => {
                *position += 1;
                paths.push((prefix, "*".into()));
                return;
            }
            _ => return,
        }
    }
}

fn alias(tokens: &[(usize, Token)], position: &mut usize) -> Option<String> {
    if tokens.get(*position).map(|t| &t.1) != Some(&Token::Word("as".into())) {
        return None;
    }
    let Some((_, Token::Word(name))) = tokens.get(*position + 1) else {
        return None;
    };
    *position += 2;
    Some(name.clone())
}

/// Every path a cleaned source names that could lead into the crate: the paths of `use`
/// statements, and every `crate::…`, `super::…`, `self::…` and `clusterdns_…::…` (a member
/// crate's) path elsewhere.
fn paths(source: &str) -> Vec<(usize, Vec<String>)> {
    let tokens = tokens(source);
    let mut found = Vec::new();
    let mut index = 0;
    while index < tokens.len() {
        let (line, token) = &tokens[index];
        if *token == Token::Word("use".into()) {
            let mut position = index + 1;
            let mut paths = Vec::new();
            use_tree(&tokens, &mut position, Vec::new(), &mut paths);
            found.extend(paths.into_iter().map(|(p, _)| (*line, p)));
            index = position;
            continue;
        }
        // `pub(in crate::server)` names where an item is seen, not what it uses.
        let visibility = index >= 2
            && tokens[index - 1].1 == Token::Word("in".into())
            && tokens[index - 2].1 == Token::Punct('(');
        let starts = !visibility
            && matches!(token, Token::Word(w) if ["crate", "$crate", "super", "self"].contains(&w.as_str())
                || w.starts_with("clusterdns_"));
        let after_colons = index > 0 && tokens[index - 1].1 == Token::Colons;
        if starts && !after_colons && tokens.get(index + 1).map(|t| &t.1) == Some(&Token::Colons) {
            let mut path = Vec::new();
            let mut position = index;
            while let Some((_, Token::Word(word))) = tokens.get(position) {
                path.push(word.clone());
                if tokens.get(position + 1).map(|t| &t.1) != Some(&Token::Colons) {
                    break;
                }
                position += 2;
            }
            found.push((*line, path));
            index = position + 1;
            continue;
        }
        index += 1;
    }
    found
}

/// The source with comments, string and char literals and `#[cfg(test)]` items blanked
/// (line breaks kept), and the names of the test-only modules it declares (`mod tests;`).
fn clean(source: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('#') | Some('"'))
            && !i
                .checked_sub(1)
                .is_some_and(|p| chars[p].is_alphanumeric() || chars[p] == '_')
        {
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (1..=hashes).all(|h| chars.get(j + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                blank(&mut out, chars[j]);
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if let Some(&c) = chars.get(i) {
                    blank(&mut out, c);
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            if next == Some('\\') {
                let mut j = i + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    strip_tests(&out)
}

/// Blanks each item under `#[cfg(test)]`; returns the names of the `mod x;` among them.
fn strip_tests(source: &str) -> (String, Vec<String>) {
    let mut chars: Vec<char> = source.chars().collect();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut modules = Vec::new();
    let mut i = 0;
    while i + marker.len() <= chars.len() {
        if chars[i..i + marker.len()] != marker[..] {
            i += 1;
            continue;
        }
        let start = i;
        let mut j = i + marker.len();
        let mut depth = 0usize;
        let mut words = String::new();
        // The item ends at its first `;` outside brackets, or at the brace closing its body.
        while j < chars.len() {
            match chars[j] {
                '[' | '(' => depth += 1,
                ']' | ')' => depth = depth.saturating_sub(1),
                ';' if depth == 0 => {
                    j += 1;
                    break;
                }
                '{' if depth == 0 => {
                    let mut braces = 0;
                    while j < chars.len() {
                        match chars[j] {
                            '{' => braces += 1,
                            '}' => {
                                braces -= 1;
                                if braces == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        j += 1;
                    }
                    j += 1;
                    words.clear(); // an inline module: nothing on disk to skip
                    break;
                }
                c => words.push(c),
            }
            j += 1;
        }
        let item: Vec<&str> = words.split_whitespace().collect();
        if let Some(at) = item.iter().position(|w| *w == "mod")
            && let Some(name) = item.get(at + 1)
        {
            modules.push(name.to_string());
        }
        let end = j.min(chars.len());
        for c in &mut chars[start..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = j;
    }
    (chars.into_iter().collect(), modules)
}

#[test]
fn the_scanner_sees_paths_as_the_compiler_does() {
    let source = r##"
use super::{plan::{self, X}, names::Y as Z};
// use crate::server::A;
/// [`crate::server`]
fn f<'a>(s: &'a str) { let s = "crate::server::B"; let r = r#"super::x"#; crate::wire::write(s, '\''); }
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests { use crate::server::C; }
#[cfg(test)]
mod support;
fn g(p: clusterdns_model::Protocol, q: std::clusterdns_x::Y) {}
"##;
    let (cleaned, test_modules) = clean(source);
    assert_eq!(test_modules, ["support"]);
    let found: Vec<(usize, String)> = paths(&cleaned)
        .into_iter()
        .map(|(line, path)| (line, path.join("::")))
        .collect();
    let expected = [
        (2, "super::plan"),
        (2, "super::plan::X"),
        (2, "super::names::Y"),
        (5, "crate::wire::write"),
        (11, "clusterdns_model::Protocol"),
    ];
    assert_eq!(found, expected.map(|(l, p)| (l, p.to_string())));
}
