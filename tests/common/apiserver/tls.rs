//! The TLS material of [`ApiServer::start_tls`](super::ApiServer::start_tls): a CA, a
//! server certificate for `127.0.0.1` and `localhost`, and a client certificate the server
//! requires, all made fresh and written as PEM files.

use std::path::PathBuf;
use std::sync::Arc;

use crate::common::certs::ca;
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig, crypto};

/// The PEM files a client needs, in the order of the `tls CERT KEY CACERT` option. They
/// live in a temporary directory removed with the server.
pub struct TlsFiles {
    /// The client certificate (`CN=clusterdns`, `O=system:masters`).
    pub cert: PathBuf,
    /// Its private key (PKCS#8).
    pub key: PathBuf,
    /// The CA that signed the server's and the client's certificates.
    pub ca: PathBuf,
    /// A certificate and key from another CA, which the server refuses.
    pub stranger_cert: PathBuf,
    pub stranger_key: PathBuf,
    pub dir: tempfile::TempDir,
}

fn client(issuer: &Issuer<'_, KeyPair>) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "clusterdns");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, issuer).unwrap().pem();
    (cert, key.serialize_pem())
}

/// Makes the certificates, writes the files, and builds the server's configuration.
pub(super) fn generate() -> (TlsFiles, ServerConfig) {
    let (ca_params, ca_key, ca_pem) = ca("stand-in CA");
    let issuer = Issuer::new(ca_params, ca_key);

    let server_key = KeyPair::generate().unwrap();
    let mut server_params =
        CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    server_params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_pem = server_params.signed_by(&server_key, &issuer).unwrap().pem();

    let (client_cert, client_key) = client(&issuer);
    let (other_params, other_key, _) = ca("another CA");
    let (stranger_cert, stranger_key) = client(&Issuer::new(other_params, other_key));

    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let files = TlsFiles {
        cert: write("client.crt", &client_cert),
        key: write("client.key", &client_key),
        ca: write("ca.crt", &ca_pem),
        stranger_cert: write("stranger.crt", &stranger_cert),
        stranger_key: write("stranger.key", &stranger_key),
        dir,
    };

    let provider = Arc::new(crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
            .build()
            .unwrap();
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(server_pem.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(server_key.serialize_pem().as_bytes()).unwrap(),
        )
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    (files, config)
}
