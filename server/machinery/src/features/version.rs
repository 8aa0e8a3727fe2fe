//! Kubernetes versions as the compatibility flags name them (`1.34`): this binary's, the
//! emulated one (`--emulated-version`) and the oldest one it stays compatible with
//! (`--min-compatibility-version`).

use std::fmt;

/// A `major.minor` version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32) -> Version {
        Version { major, minor }
    }

    /// One minor version earlier (`1.36` -> `1.35`).
    pub const fn previous(self) -> Version {
        Version { major: self.major, minor: self.minor.saturating_sub(1) }
    }

    /// The value of a version flag: `1.34` or `kube=1.34` (this server is one component).
    /// Errors are kube-apiserver's.
    pub fn parse_flag(value: &str) -> Result<Version, String> {
        let (component, text) = match value.split_once('=') {
            Some((component, text)) => (component.trim(), text.trim()),
            None => ("kube", value.trim()),
        };
        if component != "kube" {
            return Err(format!("component not registered: {component}"));
        }
        let parts: Vec<&str> = text.strip_prefix('v').unwrap_or(text).split('.').collect();
        let number = |p: &str| p.parse::<u32>().ok().filter(|_| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        let numbers: Option<Vec<u32>> = parts.iter().map(|p| number(p)).collect();
        match numbers.as_deref() {
            Some([major, minor]) | Some([major, minor, 0]) => Ok(Version::new(*major, *minor)),
            Some([major, minor, patch]) => Err(format!("patch version not allowed, got: {component}={major}.{minor}.{patch}")),
            _ => Err(format!("could not parse {text:?} as version")),
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_as_kube_apiserver_reads_them() {
        assert_eq!(Version::parse_flag("1.34"), Ok(Version::new(1, 34)));
        assert_eq!(Version::parse_flag("kube=1.35"), Ok(Version::new(1, 35)));
        assert_eq!(Version::parse_flag("1.35.0"), Ok(Version::new(1, 35)));
        assert_eq!(Version::parse_flag("1.35.2"), Err("patch version not allowed, got: kube=1.35.2".into()));
        assert_eq!(Version::parse_flag("wardle=1.2"), Err("component not registered: wardle".into()));
        assert!(Version::parse_flag("one.two").is_err());
        assert!(Version::new(1, 34) < Version::new(1, 36));
        assert_eq!(Version::new(1, 36).previous().to_string(), "1.35");
    }
}
