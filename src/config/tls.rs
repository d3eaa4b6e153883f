//! The TLS material of *forward*'s `tls [CERT KEY] [CA]` option: PEM files read and checked
//! when the Corefile is parsed, so that a bad path or a key that does not fit its certificate
//! is an error naming the line, and the rustls client configuration built from them.
//!
//! As CoreDNS's `plugin/pkg/tls.NewTLSConfigFromArgs`: no argument trusts the system's
//! certificate authorities and sends no client certificate; `CA` trusts that file's; `CERT
//! KEY` authenticates with that pair and trusts the system's; `CERT KEY CA` both. TLS 1.2 is
//! the lowest version offered (CoreDNS's minimum).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};

use super::env::Environment;

/// The `tls` option of one *forward*, read and checked.
#[derive(Debug, PartialEq)]
pub struct ForwardTls {
    /// The certificate authorities an upstream's certificate must chain to.
    pub roots: Vec<CertificateDer<'static>>,
    /// The file the roots were read from; `None` for the system's store.
    pub ca_file: Option<PathBuf>,
    /// `tls CERT KEY [CA]`: the client certificate this server presents.
    pub identity: Option<ClientIdentity>,
}

/// A client certificate chain and its private key.
#[derive(Debug, PartialEq)]
pub struct ClientIdentity {
    /// The certificate (and any intermediates), leaf first, as in CERT.
    pub chain: Vec<CertificateDer<'static>>,
    /// The private key of KEY.
    pub key: PrivateKeyDer<'static>,
}

impl Clone for ClientIdentity {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl Clone for ForwardTls {
    fn clone(&self) -> Self {
        Self {
            roots: self.roots.clone(),
            ca_file: self.ca_file.clone(),
            identity: self.identity.clone(),
        }
    }
}

impl ForwardTls {
    /// Reads the files of `tls ARGS...` (zero to three paths, relative ones resolved against
    /// `base`, the Corefile's directory). The error says what is wrong with which file.
    pub(crate) fn read(args: &[&str], base: &Path, env: &Environment) -> Result<Self, TlsError> {
        let path = |arg: &str| base.join(arg);
        let (cert, key, ca) = match args {
            [] => (None, None, None),
            [ca] => (None, None, Some(path(ca))),
            [cert, key] => (Some(path(cert)), Some(path(key)), None),
            [cert, key, ca] => (Some(path(cert)), Some(path(key)), Some(path(ca))),
            _ => {
                return Err(TlsError::TooManyArguments(args.len()));
            }
        };
        let roots = match &ca {
            Some(ca) => certificates(ca, env, "CA")?,
            None => system_roots()?,
        };
        let identity = match (cert, key) {
            (Some(cert), Some(key)) => Some(ClientIdentity {
                chain: certificates(&cert, env, "certificate")?,
                key: private_key(&key, env)?,
            }),
            _ => None,
        };
        let tls = Self {
            roots,
            ca_file: ca,
            identity,
        };
        // Builds it once now, so that a key that does not match its certificate (or a CA
        // rustls cannot use) is refused at the line, not at the first query.
        tls.client_config()?;
        Ok(tls)
    }

    /// The system's trust anchors with no client certificate: what `tls://` upstreams use
    /// when the block has no `tls` line.
    pub fn system_roots() -> Result<Self, TlsError> {
        Ok(Self {
            roots: system_roots()?,
            ca_file: None,
            identity: None,
        })
    }

    /// The rustls client configuration: these roots, this identity, TLS 1.2 and 1.3 on ring.
    pub fn client_config(&self) -> Result<ClientConfig, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut store = RootCertStore::empty();
        let (added, _ignored) = store.add_parsable_certificates(self.roots.iter().cloned());
        if added == 0 {
            return Err(match &self.ca_file {
                Some(ca) => TlsError::NoUsableCa(ca.clone()),
                None => TlsError::NoUsableSystemCa,
            });
        }
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Protocol)?
            .with_root_certificates(store);
        let mut config = match &self.identity {
            Some(identity) => builder
                .with_client_auth_cert(identity.chain.clone(), identity.key.clone_key())
                .map_err(TlsError::ClientCertificate)?,
            None => builder.with_no_client_auth(),
        };
        // RFC 7858 asks for no ALPN; CoreDNS (Go's crypto/tls via miekg/dns) sends none.
        config.alpn_protocols.clear();
        Ok(config)
    }
}

/// The certificates of a PEM file (`what` names the file's role in messages).
fn certificates(
    path: &Path,
    env: &Environment,
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let text = env.read_small_file(path).map_err(|e| TlsError::Read {
        what,
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let certificates = CertificateDer::pem_slice_iter(text.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::BadPem {
            what,
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    if certificates.is_empty() {
        return Err(TlsError::NoCertificate {
            what,
            path: path.to_owned(),
        });
    }
    Ok(certificates)
}

/// The first private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
fn private_key(path: &Path, env: &Environment) -> Result<PrivateKeyDer<'static>, TlsError> {
    let text = env.read_small_file(path).map_err(|e| TlsError::Read {
        what: "key",
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| TlsError::NoKey {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// The operating system's trust anchors (`/etc/ssl/certs` and the like, or `SSL_CERT_FILE`).
fn system_roots() -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let found = rustls_native_certs::load_native_certs();
    if found.certs.is_empty() {
        let why = found
            .errors
            .first()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        return Err(TlsError::NoSystemRoots(why));
    }
    Ok(found.certs)
}

/// What is wrong with a `tls` option's files, or with the client configuration built from
/// them.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// More than CERT KEY CA.
    #[error("maximum of three arguments allowed for TLS config, found {0}")]
    TooManyArguments(usize),
    /// A file could not be read (`what`: CA, certificate or key).
    #[error("error reading {what} file {}: {reason}", path.display())]
    Read {
        /// The file's role.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The system's error.
        reason: String,
    },
    /// A certificate file that is not PEM.
    #[error("{what} file {}: bad PEM: {reason}", path.display())]
    BadPem {
        /// The file's role.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The PEM parser's error.
        reason: String,
    },
    /// A PEM file with no certificate in it.
    #[error("{what} file {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)", path.display())]
    NoCertificate {
        /// The file's role.
        what: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// A key file with no private key rustls reads.
    #[error("key file {} holds no usable PEM private key: {reason}", path.display())]
    NoKey {
        /// The file.
        path: PathBuf,
        /// The PEM parser's error.
        reason: String,
    },
    /// The system's store is empty (with the first loading error, `: ...`, if any).
    #[error(
        "the system has no CA certificates to verify upstreams with{0} (name a CA file: tls CA)"
    )]
    NoSystemRoots(String),
    /// No certificate of the CA file is one rustls can use.
    #[error("{}: no usable CA certificate", .0.display())]
    NoUsableCa(PathBuf),
    /// No certificate of the system's store is one rustls can use.
    #[error("the system has no usable CA certificate (name a CA file: tls CA)")]
    NoUsableSystemCa,
    /// rustls refused the protocol versions.
    #[error("TLS: {0}")]
    Protocol(rustls::Error),
    /// rustls refused the client certificate and key (a key that is not the certificate's).
    #[error("could not load TLS cert: {0}")]
    ClientCertificate(rustls::Error),
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn too_many_arguments() {
        let error = ForwardTls::read(
            &["a", "b", "c", "d"],
            Path::new("/"),
            &Environment::system(),
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("maximum of three arguments"),
            "{error}"
        );
    }

    #[test]
    fn files_that_are_not_pem_are_refused() {
        let env = Environment::isolated()
            .with_file("/t/empty.pem", "")
            .with_file("/t/text.pem", "hello\n");
        for (args, want) in [
            (
                vec!["/t/missing.pem"],
                "error reading CA file /t/missing.pem",
            ),
            (
                vec!["/t/empty.pem"],
                "CA file /t/empty.pem holds no PEM certificate",
            ),
            (vec!["x.pem"], "error reading CA file /t/x.pem"),
            (
                vec!["/t/text.pem", "/t/text.pem", "/t/text.pem"],
                "CA file /t/text.pem holds no PEM certificate",
            ),
        ] {
            let error = ForwardTls::read(&args, Path::new("/t"), &env).unwrap_err();
            assert!(error.to_string().contains(want), "{args:?}: {error}");
        }
    }
}
