//! CertificateApproval and CertificateSigning, validating admission steps: approving or denying
//! a CertificateSigningRequest (its `approval` subresource) needs the `approve` verb, and
//! issuing its certificate (a `status` write that changes `status.certificate`) the `sign` verb,
//! on the `signers` resource named by the request's signer, or by its domain with `/*`.

use serde_json::Value;

use super::{Operation, Request, Validating};
use access::{Attributes, Auth};
use machinery::error::{ApiError, ApiResult};

const GROUP: &str = "certificates.k8s.io";

/// One of the two plugins: [`CertificateSigners::approval`] or [`CertificateSigners::signing`].
pub struct CertificateSigners {
    auth: Auth,
    /// The subresource it checks: `approval` or `status`.
    subresource: &'static str,
}

impl CertificateSigners {
    /// CertificateApproval: approving or denying needs `approve` on the signer.
    pub fn approval(auth: Auth) -> CertificateSigners {
        CertificateSigners { auth, subresource: "approval" }
    }

    /// CertificateSigning: issuing the certificate needs `sign` on the signer.
    pub fn signing(auth: Auth) -> CertificateSigners {
        CertificateSigners { auth, subresource: "status" }
    }

    /// Whether the user may `verb` the signer `name`, or every signer of its domain.
    async fn may(&self, r: &Request<'_>, verb: &str, signer: &str) -> bool {
        let mut names = vec![signer.to_string()];
        if let Some((domain, _)) = signer.split_once('/') {
            names.push(format!("{domain}/*"));
        }
        for name in names {
            let attrs = Attributes {
                user: (*r.req.user).clone(),
                verb: verb.into(),
                resource_request: true,
                api_group: GROUP.into(),
                api_version: "*".into(),
                resource: "signers".into(),
                name,
                ..Default::default()
            };
            if self.auth.chain.allows(&attrs).await {
                return true;
            }
        }
        false
    }
}

#[async_trait::async_trait]
impl Validating for CertificateSigners {
    fn name(&self) -> &'static str {
        match self.subresource {
            "approval" => "CertificateApproval",
            _ => "CertificateSigning",
        }
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let info = r.req.info;
        let (Some(obj), Some(old)) = (r.object, r.old) else { return Ok(()) };
        if (info.group, info.resource, r.operation) != (GROUP, "certificatesigningrequests", Operation::Update) {
            return Ok(());
        }
        let signer = obj["spec"]["signerName"].as_str().unwrap_or_default();
        if r.req.subresource.as_deref() != Some(self.subresource) {
            return Ok(());
        }
        let (verb, needed) = match self.subresource {
            "approval" => ("approve", true),
            _ => ("sign", obj["status"]["certificate"] != old["status"]["certificate"] && !cert_empty(&obj["status"]["certificate"])),
        };
        if !needed || self.may(r, verb, signer).await {
            return Ok(());
        }
        Err(ApiError::forbidden(GROUP, "certificatesigningrequests", r.req.name(), format!("user not permitted to {verb} requests with signerName \"{signer}\"")))
    }
}

fn cert_empty(v: &Value) -> bool {
    v.as_str().is_none_or(str::is_empty)
}
