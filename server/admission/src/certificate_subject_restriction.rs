//! CertificateSubjectRestriction: a CertificateSigningRequest for the
//! `kubernetes.io/kube-apiserver-client` signer may not ask for the `system:masters` group
//! (whose members pass every authorization check).

use serde_json::Value;

use crate::{Operation, Request, Validating};
use machinery::error::ApiResult;

const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const MASTERS: &str = "system:masters";

pub struct CertificateSubjectRestriction;

#[async_trait::async_trait]
impl Validating for CertificateSubjectRestriction {
    fn name(&self) -> &'static str {
        "CertificateSubjectRestriction"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let Some(csr) = r.object.filter(|_| r.operation == Operation::Create && r.concerns("certificates.k8s.io", "certificatesigningrequests")) else { return Ok(()) };
        if csr["spec"]["signerName"] != SIGNER {
            return Ok(());
        }
        let organizations = organizations(csr).map_err(|e| r.forbidden(format!("failed to parse CSR: {e}")))?;
        if organizations.iter().any(|o| o == MASTERS) {
            return Err(r.forbidden(format!("use of {SIGNER} signer with {MASTERS} group is not allowed")));
        }
        Ok(())
    }
}

/// The subject's organizations of the request's PEM `CERTIFICATE REQUEST` (base64 in `spec.request`).
fn organizations(csr: &Value) -> Result<Vec<String>, String> {
    use base64::Engine;
    use x509_parser::prelude::FromDer;
    let text = base64::engine::general_purpose::STANDARD.decode(csr["spec"]["request"].as_str().unwrap_or_default()).map_err(|e| e.to_string())?;
    let block = pem::parse(&text).map_err(|_| "PEM block type must be CERTIFICATE REQUEST".to_string())?;
    let (_, request) = x509_parser::certification_request::X509CertificationRequest::from_der(block.contents()).map_err(|e| e.to_string())?;
    Ok(request.certification_request_info.subject.iter_organization().filter_map(|o| o.as_str().ok().map(str::to_string)).collect())
}
