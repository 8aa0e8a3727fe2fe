//! What the authorizers count, as kube-apiserver's authorization metrics name it; the server's
//! metrics registry implements it.

/// The authorization metrics.
pub trait AuthorizationMetrics: Send + Sync {
    /// Counts one authorizer's decision (`allowed` or `denied`) by its type and name.
    fn authorization_decision(&self, kind: &str, name: &str, allowed: bool);
    /// Counts one call to an authorization webhook (`success`, `error` or `timeout`).
    fn authorization_webhook_evaluation(&self, name: &str, result: &str);
    /// Counts a webhook failure answered with no opinion.
    fn authorization_webhook_fail_open(&self, name: &str, result: &str);
    /// Counts a webhook's match conditions failing to evaluate.
    fn authorization_match_condition_error(&self, name: &str);
    /// Counts an automatic reload of the authorization configuration and stamps its time.
    fn authorization_config_reload(&self, success: bool, apiserver_id_hash: &str);
}
