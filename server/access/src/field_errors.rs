//! Field errors of a configuration file, collected and printed as Kubernetes aggregates them
//! (`path: Invalid value: "x": detail`; one alone, several in brackets), and the check of a
//! file's `apiVersion` and `kind`.

/// The versions of `apiserver.config.k8s.io` configuration files.
const API_VERSIONS: &[&str] = &["apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1", "apiserver.config.k8s.io/v1alpha1"];

/// Checks that a file is a `kind` of `apiserver.config.k8s.io`, as Kubernetes words a refusal.
pub fn check_type(kind: &str, api_version: Option<&str>, found_kind: Option<&str>) -> Result<(), String> {
    match (api_version, found_kind) {
        (Some(v), Some(k)) if k == kind && API_VERSIONS.contains(&v) => Ok(()),
        (None, _) | (_, None) => Err(format!("failed to load {kind} from file: apiVersion and kind must be set")),
        (Some(v), Some(k)) => Err(format!("failed to load {kind} from file: no kind {k:?} is registered for version {v:?}")),
    }
}

#[derive(Default)]
pub struct FieldErrors(pub Vec<String>);

impl FieldErrors {
    pub fn required(&mut self, path: &str, detail: &str) {
        self.0.push(if detail.is_empty() { format!("{path}: Required value") } else { format!("{path}: Required value: {detail}") });
    }
    pub fn invalid(&mut self, path: &str, value: &str, detail: &str) {
        self.0.push(format!("{path}: Invalid value: {value:?}: {detail}"));
    }
    pub fn not_supported(&mut self, path: &str, value: &str, choices: &str) {
        self.0.push(format!("{path}: Unsupported value: {value:?}: supported values: {choices}"));
    }
    pub fn duplicate(&mut self, path: &str, value: &str) {
        self.0.push(format!("{path}: Duplicate value: {value:?}"));
    }
    pub fn too_many(&mut self, path: &str, count: usize, most: usize) {
        self.0.push(format!("{path}: Too many: {count}: must have at most {most} items"));
    }
    pub fn forbidden(&mut self, path: &str, detail: &str) {
        self.0.push(format!("{path}: Forbidden: {detail}"));
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn into_result<T>(self, ok: T) -> Result<T, String> {
        match self.0.len() {
            0 => Ok(ok),
            1 => Err(self.0.into_iter().next().unwrap_or_default()),
            _ => Err(format!("[{}]", self.0.join(", "))),
        }
    }
}
