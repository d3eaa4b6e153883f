//! The TLS material of a DNS-over-TLS upstream stand-in ([`TestUpstream::start_tls`]): a CA
//! made for the test, a server certificate for `dns.test` and `127.0.0.1` signed by it, and
//! a client certificate for `tls CERT KEY CA`, written as PEM files.
//!
//! [`TestUpstream::start_tls`]: super::upstream::TestUpstream::start_tls

use std::path::PathBuf;
use std::sync::Arc;

use crate::common::certs::ca;
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig, crypto};

/// The name on the stand-in's certificate (besides its address, 127.0.0.1).
pub const SERVER_NAME: &str = "dns.test";

/// PEM files for the client side, in a temporary directory removed on drop.
pub struct DotFiles {
    /// The CA that signed the server's and the client's certificates.
    pub ca: PathBuf,
    /// A client certificate and its key (PKCS#8), for `tls CERT KEY CA`.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// A CA that signed nothing here: trusting it alone fails every handshake.
    pub other_ca: PathBuf,
    pub dir: tempfile::TempDir,
}

/// Makes the certificates, writes the client's files, and builds the server's
/// configuration (requiring a client certificate from the CA when `require_client_cert`).
pub(super) fn generate(require_client_cert: bool) -> (DotFiles, ServerConfig) {
    let (ca_params, ca_key, ca_pem) = ca("DoT stand-in CA");
    let issuer = Issuer::new(ca_params, ca_key);

    let server_key = KeyPair::generate().unwrap();
    let mut server_params =
        CertificateParams::new(vec![SERVER_NAME.to_owned(), "127.0.0.1".to_owned()]).unwrap();
    server_params
        .distinguished_name
        .push(DnType::CommonName, SERVER_NAME);
    server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_pem = server_params.signed_by(&server_key, &issuer).unwrap().pem();

    let client_key = KeyPair::generate().unwrap();
    let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    client_params
        .distinguished_name
        .push(DnType::CommonName, "clusterdns");
    client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_pem = client_params.signed_by(&client_key, &issuer).unwrap().pem();

    let (_, _, other_pem) = ca("unrelated CA");

    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let files = DotFiles {
        ca: write("ca.crt", &ca_pem),
        cert: write("client.crt", &client_pem),
        key: write("client.key", &client_key.serialize_pem()),
        other_ca: write("other-ca.crt", &other_pem),
        dir,
    };

    let provider = Arc::new(crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if require_client_cert {
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
            .unwrap();
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(server_pem.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(server_key.serialize_pem().as_bytes()).unwrap(),
        )
        .unwrap();
    (files, config)
}
