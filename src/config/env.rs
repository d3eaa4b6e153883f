//! What parsing may ask of the host: environment variables (for `{$VAR}` and `{%VAR%}`),
//! network interfaces (for `bind IFACE`) and the resolv.conf files *forward* reads. Tests
//! replace them with fixed values.

use std::collections::BTreeMap;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The host facts a Corefile may refer to.
///
/// [`Environment::system`] reads the process environment and the machine's interfaces;
/// [`Environment::isolated`] knows no variable and no interface, and the `with_*` methods add
/// fixed ones (a fixed set replaces the system's entirely). Files are different: a file given
/// with [`Environment::with_file`] shadows that one path, and every other path is read from
/// the disk, whichever constructor was used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: Option<BTreeMap<String, String>>,
    interfaces: Option<Vec<(String, IpAddr)>>,
    files: BTreeMap<PathBuf, String>,
}

impl Environment {
    /// The process environment and the machine's network interfaces.
    pub fn system() -> Self {
        Self::default()
    }

    /// No environment variable is set and the machine has no interface.
    pub fn isolated() -> Self {
        Self {
            vars: Some(BTreeMap::new()),
            interfaces: Some(Vec::new()),
            files: BTreeMap::new(),
        }
    }

    /// Sets an environment variable (and stops consulting the process environment).
    #[must_use]
    pub fn with_var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), value.into());
        self
    }

    /// Adds an address of a network interface (and stops consulting the machine's).
    #[must_use]
    pub fn with_interface(mut self, name: impl Into<String>, address: IpAddr) -> Self {
        self.interfaces
            .get_or_insert_with(Vec::new)
            .push((name.into(), address));
        self
    }

    /// Makes reading `path` (a resolv.conf named by *forward*) return `text`, whatever is on
    /// the disk.
    #[must_use]
    pub fn with_file(mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> Self {
        self.files.insert(path.into(), text.into());
        self
    }

    /// The text of the small file at `path` (bytes that are not UTF-8 replaced): the fixed
    /// text when [`Environment::with_file`] gave one, else the disk's.
    pub(crate) fn read_small_file(&self, path: &Path) -> io::Result<String> {
        match self.files.get(path) {
            Some(text) => Ok(text.clone()),
            None => super::fs::read_text_lossy(path),
        }
    }

    /// The value of an environment variable; unset (or not UTF-8) is `None`.
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        match &self.vars {
            Some(vars) => vars.get(name).cloned(),
            None => std::env::var(name).ok(),
        }
    }

    /// The addresses of the interface called `name`, or `None` when there is no such interface.
    pub(crate) fn interface_addresses(&self, name: &str) -> io::Result<Option<Vec<IpAddr>>> {
        let all: Vec<(String, IpAddr)> = match &self.interfaces {
            Some(fixed) => fixed.clone(),
            None => if_addrs::get_if_addrs()?
                .into_iter()
                .map(|interface| (interface.name.clone(), interface.ip()))
                .collect(),
        };
        let mut found = false;
        let mut addresses = Vec::new();
        for (interface, address) in all {
            if interface == name {
                found = true;
                addresses.push(address);
            }
        }
        Ok(found.then_some(addresses))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn fixed_values_replace_the_system() {
        let env = Environment::isolated()
            .with_var("A", "1")
            .with_interface("eth0", "10.0.0.1".parse().unwrap())
            .with_interface("eth0", "fd00::1".parse().unwrap());
        assert_eq!(env.var("A").as_deref(), Some("1"));
        assert_eq!(env.var("PATH"), None);
        assert_eq!(
            env.interface_addresses("eth0").unwrap().map(|a| a.len()),
            Some(2)
        );
        assert_eq!(env.interface_addresses("eth1").unwrap(), None);
    }

    #[test]
    fn fixed_files_shadow_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let on_disk = dir.path().join("on-disk");
        std::fs::write(&on_disk, "disk").unwrap();
        let env = Environment::isolated().with_file("/etc/resolv.conf", "fixed");
        assert_eq!(
            env.read_small_file(Path::new("/etc/resolv.conf")).unwrap(),
            "fixed"
        );
        assert_eq!(env.read_small_file(&on_disk).unwrap(), "disk");
        assert!(env.read_small_file(&dir.path().join("missing")).is_err());
    }
}
