//! Pod Security levels and policy versions, and a namespace's policy: one level and version
//! for each of the three modes (enforce, audit, warn), as Kubernetes' `pod-security-admission`
//! API defines them.

use std::fmt;

/// A Pod Security Standard, from the least to the most strict (the order compares them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// The level `value` names; a value that names none fails closed (restricted) with
    /// Kubernetes' reason.
    pub fn parse(value: &str) -> Result<Level, Level> {
        match value {
            "privileged" => Ok(Level::Privileged),
            "baseline" => Ok(Level::Baseline),
            "restricted" => Ok(Level::Restricted),
            _ => Err(Level::Restricted),
        }
    }
}

/// Why a level is refused.
pub const LEVEL_PROBLEM: &str = "must be one of privileged, baseline, restricted";
/// Why a version is refused.
pub const VERSION_PROBLEM: &str = "must be \"latest\" or \"v1.x\"";

/// A policy version: `latest`, or the checks as they stood in Kubernetes `v1.<minor>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    Latest,
    Minor(u64),
}

impl Version {
    /// The version `value` names (`latest` or `v1.N`); one that names none is `latest`.
    pub fn parse(value: &str) -> Result<Version, Version> {
        if value == "latest" {
            return Ok(Version::Latest);
        }
        let minor = value.strip_prefix("v1.").filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) && (m.len() == 1 || !m.starts_with('0')));
        // Go's Atoi takes what fits a signed 64-bit integer.
        minor.and_then(|m| m.parse::<i64>().ok()).map(|m| Version::Minor(m as u64)).ok_or(Version::Latest)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Latest => f.write_str("latest"),
            Version::Minor(m) => write!(f, "v1.{m}"),
        }
    }
}

/// One mode's level and version, written `level:version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LevelVersion {
    pub level: Level,
    pub version: Version,
}

impl LevelVersion {
    pub const PRIVILEGED: LevelVersion = LevelVersion { level: Level::Privileged, version: Version::Latest };

    /// Both privileged (whatever their versions), or the same level and version.
    fn equivalent(&self, other: &LevelVersion) -> bool {
        (self.level == Level::Privileged && other.level == Level::Privileged) || self == other
    }
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level.as_str(), self.version)
    }
}

/// A namespace's policy: what is refused, what is audited, what is warned about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub enforce: LevelVersion,
    pub audit: LevelVersion,
    pub warn: LevelVersion,
}

impl Policy {
    pub const PRIVILEGED: Policy = Policy { enforce: LevelVersion::PRIVILEGED, audit: LevelVersion::PRIVILEGED, warn: LevelVersion::PRIVILEGED };

    pub fn fully_privileged(&self) -> bool {
        [self.enforce, self.audit, self.warn].iter().all(|lv| lv.level == Level::Privileged)
    }

    pub fn equivalent(&self, other: &Policy) -> bool {
        self.enforce.equivalent(&other.enforce) && self.audit.equivalent(&other.audit) && self.warn.equivalent(&other.warn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_kubernetes_parses_them() {
        assert_eq!(Version::parse("latest"), Ok(Version::Latest));
        assert_eq!(Version::parse("v1.0"), Ok(Version::Minor(0)));
        assert_eq!(Version::parse("v1.24"), Ok(Version::Minor(24)));
        for bad in ["v1.01", "v2.0", "1.24", "v1.", "v1.x", "Latest", ""] {
            assert_eq!(Version::parse(bad), Err(Version::Latest), "{bad}");
        }
        assert_eq!(Version::Minor(7).to_string(), "v1.7");
    }

    #[test]
    fn levels_order_by_strictness_and_fail_closed() {
        assert!(Level::Privileged < Level::Baseline && Level::Baseline < Level::Restricted);
        assert_eq!(Level::parse("baseline"), Ok(Level::Baseline));
        assert_eq!(Level::parse("Baseline"), Err(Level::Restricted));
        assert_eq!(LevelVersion { level: Level::Restricted, version: Version::Minor(30) }.to_string(), "restricted:v1.30");
    }
}
