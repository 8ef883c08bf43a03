//! The TLS setup of [`ReqwestTransport`](super::ReqwestTransport): rustls
//! on the `ring` provider, certificates checked by the platform's verifier
//! once a connection needs it.

use std::sync::{Arc, OnceLock};

use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls_platform_verifier::Verifier;

use crate::provider::transport::TransportError;

/// The client configuration: rustls on the `ring` provider (passed here,
/// not installed process-wide), the platform's verifier, HTTP/1.1 offered
/// by ALPN, as reqwest would set it up.
pub(super) fn client_config() -> Result<rustls::ClientConfig, TransportError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TransportError::Other(format!("could not set up TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(LazyPlatformVerifier::new(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The platform's verifier, built on the first TLS handshake. Building it
/// reads every root certificate the system has (on Linux, each file of
/// `SSL_CERT_DIR`: 12% of a process that plays one cell back), which a
/// client talking plain HTTP to a playback or fake server never needs.
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    verifier: OnceLock<Result<Verifier, rustls::Error>>,
}

impl LazyPlatformVerifier {
    fn new(provider: Arc<CryptoProvider>) -> LazyPlatformVerifier {
        LazyPlatformVerifier {
            provider,
            verifier: OnceLock::new(),
        }
    }

    /// The platform's verifier, or why the system's certificates gave none.
    fn verifier(&self) -> Result<&Verifier, rustls::Error> {
        self.verifier
            .get_or_init(|| Verifier::new(self.provider.clone()))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls13_signature(message, cert, dss)
    }

    /// The schemes the provider verifies, as the platform's verifier
    /// answers them, known without the certificates.
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    #[test]
    fn the_certificates_are_read_on_the_first_handshake_and_checked_as_the_platform_would() {
        let lazy = LazyPlatformVerifier::new(provider());
        assert!(lazy.verifier.get().is_none(), "built before any handshake");
        // A handshake's first question needs no certificate store.
        let platform = Verifier::new(provider()).expect("the system has root certificates");
        assert_eq!(
            lazy.supported_verify_schemes(),
            platform.supported_verify_schemes()
        );
        assert!(lazy.verifier.get().is_none());
        // A certificate is checked by the platform's verifier, built now.
        let name = ServerName::try_from("api.openai.com").unwrap();
        let garbage = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        let lazily = lazy.verify_server_cert(&garbage, &[], &name, &[], UnixTime::now());
        let at_once = platform.verify_server_cert(&garbage, &[], &name, &[], UnixTime::now());
        assert!(lazily.is_err(), "a malformed certificate passed");
        assert_eq!(lazily.unwrap_err(), at_once.unwrap_err());
        assert!(lazy.verifier.get().is_some_and(Result::is_ok));
    }
}
