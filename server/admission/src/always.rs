//! AlwaysAdmit and AlwaysDeny, kept by kube-apiserver for old configurations: the first lets
//! every write through (it does nothing), the second refuses every write, in its words.

use crate::{Request, Validating};
use machinery::error::ApiResult;

pub struct AlwaysDeny;

#[async_trait::async_trait]
impl Validating for AlwaysDeny {
    fn name(&self) -> &'static str {
        "AlwaysDeny"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        Err(r.forbidden("admission control is denying all modifications"))
    }
}
