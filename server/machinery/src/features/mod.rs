//! Feature gates and the emulated version (`--feature-gates`, `--emulated-version`,
//! `--min-compatibility-version`): Kubernetes 1.36's gates with their history (`gates.txt`),
//! each taken at the emulated version as kube-apiserver takes it, with its rules and messages
//! for what may be set. Set once at start; read everywhere through [`enabled`].

mod runtime_config;
mod version;

use std::collections::BTreeMap;
use std::sync::{LazyLock, OnceLock};

pub use runtime_config::RuntimeConfig;
pub use version::Version;
use runtime_config::{go_bool, join};

/// The Kubernetes release this binary implements.
pub const BINARY: Version = Version::new(1, 36);

/// The oldest release it can emulate (kube-apiserver's own floor is three back; this server
/// carries the behaviour of the last two).
pub const EMULATION_FLOOR: Version = Version::new(1, 34);

/// The gates this server acts on; every other gate of [`BINARY`] is accepted and reported as
/// kube-apiserver does, and changes nothing here (a warning says so when one is set).
pub const IMPLEMENTED: &[&str] = &[
    "APIResponseCompression",
    "AllowUnsafeMalformedObjectDeletion",
    "CBORServingAndStorage",
    "CSIServiceAccountTokenSecrets",
    "MutableCSINodeAllocatableCount",
    "MutatingAdmissionPolicy",
    "PodLevelResources",
    "PodTopologyLabelsAdmission",
    "SELinuxMountReadWriteOncePod",
    "VolumeLimitScaling",
    "WatchCacheInitializationPostStartHook",
];

/// The gate of the unsafe deletion of objects storage cannot decode.
pub const UNSAFE_DELETION_GATE: &str = "AllowUnsafeMalformedObjectDeletion";

/// The gate of the `storage-readiness` post-start hook.
pub const STORAGE_READINESS_GATE: &str = "WatchCacheInitializationPostStartHook";

/// The stage of a gate at a version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    PreAlpha,
    Alpha,
    Beta,
    Ga,
    Deprecated,
}

impl Stage {
    /// As kube-apiserver prints it (`kubernetes_feature_enabled{stage}`; GA is empty).
    pub fn label(self) -> &'static str {
        match self {
            Stage::PreAlpha => "PRE-ALPHA",
            Stage::Alpha => "ALPHA",
            Stage::Beta => "BETA",
            Stage::Ga => "",
            Stage::Deprecated => "DEPRECATED",
        }
    }
}

/// A gate's stage and default from one version on.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub since: Version,
    pub stage: Stage,
    pub default: bool,
    pub locked: bool,
}

const PRE_ALPHA: Spec = Spec { since: Version::new(0, 0), stage: Stage::PreAlpha, default: false, locked: false };

/// One gate and its history.
pub struct Gate {
    pub name: &'static str,
    specs: Vec<Spec>,
    needs: Vec<&'static str>,
}

impl Gate {
    /// The spec in force at `version`.
    pub fn at(&self, version: Version) -> Spec {
        self.specs.iter().rev().find(|s| s.since <= version).copied().unwrap_or(PRE_ALPHA)
    }
}

/// The toggles of every alpha or every beta gate not set by name.
const ALL_ALPHA: &str = "AllAlpha";
const ALL_BETA: &str = "AllBeta";

/// Every gate, by name (the two toggles included).
static GATES: LazyLock<BTreeMap<&'static str, Gate>> = LazyLock::new(|| {
    let mut gates = parse(include_str!("gates.txt"));
    for (name, stage) in [(ALL_ALPHA, Stage::Alpha), (ALL_BETA, Stage::Beta)] {
        let spec = Spec { since: Version::new(0, 0), stage, default: false, locked: false };
        gates.insert(name, Gate { name, specs: vec![spec], needs: Vec::new() });
    }
    gates
});

fn parse(text: &'static str) -> BTreeMap<&'static str, Gate> {
    let mut gates = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (history, needs) = line.split_once(" | needs ").unwrap_or((line, ""));
        let (name, history) = history.split_once(' ').expect("a gate has a history");
        let specs = history
            .split("; ")
            .map(|entry| {
                let words: Vec<&str> = entry.split(' ').collect();
                let since = Version::parse_flag(words[0]).expect("a gate's version");
                let stage = match words[1] {
                    "alpha" => Stage::Alpha,
                    "beta" => Stage::Beta,
                    "ga" => Stage::Ga,
                    "deprecated" => Stage::Deprecated,
                    other => panic!("stage {other} of {name}"),
                };
                Spec { since, stage, default: words[2] == "on", locked: words.get(3) == Some(&"locked") }
            })
            .collect();
        gates.insert(name, Gate { name, specs, needs: needs.split_whitespace().collect() });
    }
    gates
}

/// The versions, gates and APIs in force.
pub struct Features {
    pub emulation: Version,
    pub min_compatibility: Version,
    /// Gates set by `--feature-gates` (the toggles expanded); the others take their default.
    set: BTreeMap<&'static str, bool>,
    /// The group versions and resources `--runtime-config` leaves on.
    pub apis: RuntimeConfig,
    /// `--emulation-forward-compatible`: a newer version of a resource whose older beta or GA
    /// version is served at the emulated release is served too, though introduced after it.
    forward_compatible: bool,
    /// `--runtime-config-emulation-forward-compatible`: what `--runtime-config` names on is
    /// served though introduced after the emulated release.
    runtime_config_forward_compatible: bool,
}

static CURRENT: OnceLock<Features> = OnceLock::new();

impl Features {
    /// Reads the three flags (empty when not given) with kube-apiserver's rules: the versions
    /// within range, no gate set against its lock or before it exists, every enabled gate's
    /// dependencies enabled. `Ok` carries the warnings to log.
    pub fn from_flags(emulated: &str, min_compatibility: &str, gates: &str) -> Result<(Features, Vec<String>), String> {
        let emulation = if emulated.is_empty() { BINARY } else { Version::parse_flag(emulated)? };
        let min_floor = EMULATION_FLOOR.previous();
        let min_compatibility = if min_compatibility.is_empty() { emulation.previous().max(min_floor) } else { Version::parse_flag(min_compatibility)? };
        let mut errors = Vec::new();
        if emulation > BINARY || emulation < EMULATION_FLOOR {
            errors.push(format!("emulation version {emulation} is not between [{EMULATION_FLOOR}, {BINARY}.0]"));
        }
        if min_compatibility > emulation || min_compatibility < min_floor {
            errors.push(format!("minCompatibilityVersion version {min_compatibility} is not between [{min_floor}, {emulation}]"));
        }
        if !errors.is_empty() {
            return Err(join(errors));
        }
        let mut warnings = Vec::new();
        let mut requested: BTreeMap<&'static str, bool> = BTreeMap::new();
        for item in gates.split(',').filter(|i| !i.is_empty()) {
            let (name, value) = item.split_once('=').ok_or_else(|| format!("missing bool value for {}", item.trim()))?;
            let (name, value) = (name.trim(), value.trim());
            let on = go_bool(value).ok_or_else(|| format!("invalid value of {name}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax"))?;
            match GATES.get_key_value(name) {
                Some((name, _)) => {
                    requested.insert(name, on);
                }
                None => warnings.push(format!("unrecognized feature gate: {name}")),
            }
        }
        let mut set = BTreeMap::new();
        for (&name, &on) in &requested {
            let spec = GATES[name].at(emulation);
            if spec.locked && spec.default != on {
                errors.push(format!("cannot set feature gate {name} to {on}, feature is locked to {}", spec.default));
                continue;
            }
            if let Some(stage) = [(ALL_ALPHA, Stage::Alpha), (ALL_BETA, Stage::Beta)].iter().find(|(n, _)| *n == name).map(|(_, s)| *s) {
                for gate in GATES.values().filter(|g| g.at(emulation).stage == stage && !requested.contains_key(g.name)) {
                    set.insert(gate.name, on);
                }
                set.insert(name, on);
                continue;
            }
            if spec.stage == Stage::PreAlpha {
                errors.push(format!("cannot set feature gate {name} to {on}, feature is PreAlpha at emulated version {emulation}, min compatibility version {min_compatibility}"));
                continue;
            }
            set.insert(name, on);
            match spec.stage {
                Stage::Deprecated => warnings.push(format!("setting deprecated feature gate {name}={on}. It will be removed in a future release.")),
                Stage::Ga => warnings.push(format!("setting GA feature gate {name}={on}. It will be removed in a future release.")),
                _ => {}
            }
            if on != spec.default && !IMPLEMENTED.contains(&name) && name != ALL_ALPHA && name != ALL_BETA {
                warnings.push(format!("feature gate {name} is accepted but not implemented by this server: setting it changes nothing"));
            }
        }
        if !errors.is_empty() {
            return Err(join(errors));
        }
        let features = Features { emulation, min_compatibility, set, apis: RuntimeConfig::defaults(), forward_compatible: false, runtime_config_forward_compatible: false };
        for gate in GATES.values().filter(|g| features.enabled(g.name)) {
            let disabled: Vec<&str> = gate.needs.iter().copied().filter(|d| !features.enabled(d)).collect();
            if !disabled.is_empty() {
                errors.push(format!("{} is enabled, but depends on features that are disabled: [{}]", gate.name, disabled.join(" ")));
            }
        }
        if !errors.is_empty() {
            return Err(join(errors));
        }
        if emulation < BINARY {
            let alpha: Vec<&str> = GATES.values().filter(|g| g.at(emulation).stage == Stage::Alpha && features.enabled(g.name) && g.name != ALL_ALPHA).map(|g| g.name).collect();
            if !alpha.is_empty() {
                warnings.push(format!("component has alpha features enabled in emulated version, this is unsupported: features=[{}]", alpha.join(" ")));
            }
        }
        Ok((features, warnings))
    }

    /// The same, serving the APIs `--runtime-config` names, with the two forward-compatibility
    /// flags: a resource (or a whole version) named on that is newer than the emulated release
    /// is refused as kube-apiserver refuses it, unless `runtime_config_forward_compatible`.
    /// `resources` gives every built-in resource with its first release where that is recent.
    pub fn with_apis(
        mut self,
        apis: RuntimeConfig,
        forward_compatible: bool,
        runtime_config_forward_compatible: bool,
        resources: impl Iterator<Item = (&'static str, &'static str, &'static str, Option<Version>)> + Clone,
    ) -> Result<Features, String> {
        let emulating = self.emulation < BINARY;
        if forward_compatible && !emulating {
            return Err("ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version".into());
        }
        if runtime_config_forward_compatible && !emulating {
            return Err("ServerRunOptions.RuntimeConfigEmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version".into());
        }
        let current = self.emulation;
        let later = |since: Option<Version>| since.is_some_and(|v| v > current);
        let gv = |g: &str, v: &str| if g.is_empty() { v.to_string() } else { format!("{g}/{v}") };
        if !runtime_config_forward_compatible {
            for (group, version, resource, since) in resources.clone() {
                if later(since) && apis.names_enabled(group, version, resource) {
                    return Err(format!(
                        "cannot enable resource {}, Resource={resource} in runtime-config because it is introduced at {} after the current version {current}. Consider setting --runtime-config-emulation-forward-compatible=true",
                        gv(group, version),
                        since.unwrap_or(current)
                    ));
                }
            }
            let mut named: Vec<(&str, &str)> = resources.clone().map(|(g, v, _, _)| (g, v)).filter(|(g, v)| apis.names_version_enabled(g, v)).collect();
            named.dedup();
            for (group, version) in named {
                if resources.clone().filter(|(g, v, _, _)| (*g, *v) == (group, version)).all(|(_, _, _, since)| later(since)) {
                    return Err(format!(
                        "cannot enable version {} in runtime-config because all the resources have been introduced after the current version {current}. Consider setting --runtime-config-emulation-forward-compatible=true",
                        gv(group, version)
                    ));
                }
            }
        }
        self.apis = apis;
        self.forward_compatible = forward_compatible;
        self.runtime_config_forward_compatible = runtime_config_forward_compatible;
        Ok(self)
    }

    /// Whether a built-in resource is served: its version's release reached, and
    /// `--runtime-config` leaving it on. One introduced after the emulated release is served only
    /// by the forward-compatibility flags: named on by `--runtime-config`, or (`older_served`)
    /// another beta or GA version of it served.
    pub fn serves(&self, group: &str, version: &str, resource: &str, introduced: Option<Version>, older_served: bool) -> bool {
        if introduced.is_none_or(|v| v <= self.emulation) {
            return self.apis.serves(group, version, resource);
        }
        let named = self.apis.names_enabled(group, version, resource) || self.apis.names_version_enabled(group, version);
        let followed = self.forward_compatible && older_served && !version.contains("alpha") && self.apis.serves(group, version, resource);
        (self.runtime_config_forward_compatible && named) || followed
    }

    /// Whether the gate `name` is on (an unknown name is off).
    pub fn enabled(&self, name: &str) -> bool {
        match self.set.get(name) {
            Some(on) => *on,
            None => GATES.get(name).is_some_and(|g| g.at(self.emulation).default),
        }
    }

    /// Every gate known at the emulated version (pre-alpha ones left out), with its stage and
    /// whether it is on, in name order: what `kubernetes_feature_enabled` reports.
    pub fn all(&self) -> impl Iterator<Item = (&'static str, Stage, bool)> + '_ {
        GATES.values().map(|g| (g.name, g.at(self.emulation).stage, self.enabled(g.name))).filter(|(_, stage, _)| *stage != Stage::PreAlpha)
    }
}

/// Sets the process's versions and gates (once; later calls are ignored).
pub fn install(features: Features) {
    let _ = CURRENT.set(features);
}

/// The versions and gates in force: as installed, else every default at [`BINARY`].
pub fn current() -> &'static Features {
    CURRENT.get_or_init(|| Features { emulation: BINARY, min_compatibility: BINARY.previous(), set: BTreeMap::new(), apis: RuntimeConfig::defaults(), forward_compatible: false, runtime_config_forward_compatible: false })
}

/// Whether the gate `name` is on.
pub fn enabled(name: &str) -> bool {
    current().enabled(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(emulated: &str, gates: &str) -> Result<(Features, Vec<String>), String> {
        Features::from_flags(emulated, "", gates)
    }

    #[test]
    fn defaults_follow_the_emulated_version() {
        let (at36, _) = flags("", "").unwrap();
        assert!(at36.enabled("MutatingAdmissionPolicy") && at36.enabled("WatchCacheInitializationPostStartHook"));
        assert_eq!(at36.min_compatibility, Version::new(1, 35));
        let (at34, _) = flags("1.34", "").unwrap();
        assert!(!at34.enabled("MutatingAdmissionPolicy") && !at34.enabled("WatchCacheInitializationPostStartHook"));
        assert_eq!(at34.min_compatibility, Version::new(1, 33));
        let stage = |f: &Features, name: &str| f.all().find(|(n, _, _)| *n == name).map(|(_, s, _)| s);
        assert_eq!(stage(&at34, "MutatingAdmissionPolicy"), Some(Stage::Beta));
        assert_eq!(stage(&at36, "MutatingAdmissionPolicy"), Some(Stage::Ga));
        // introduced in 1.36: not there at all when 1.34 is emulated
        assert_eq!(stage(&at34, "ShardedListAndWatch"), None);
    }

    #[test]
    fn refusals_are_kube_apiserver_s() {
        assert_eq!(flags("1.33", "").err().unwrap(), "emulation version 1.33 is not between [1.34, 1.36.0]");
        assert_eq!(flags("1.37", "").err().unwrap(), "emulation version 1.37 is not between [1.34, 1.36.0]");
        assert_eq!(Features::from_flags("1.35", "1.36", "").err().unwrap(), "minCompatibilityVersion version 1.36 is not between [1.33, 1.35]");
        assert_eq!(flags("", "APIServerTracing=false").err().unwrap(), "cannot set feature gate APIServerTracing to false, feature is locked to true");
        assert_eq!(flags("1.34", "ShardedListAndWatch=true").err().unwrap(), "cannot set feature gate ShardedListAndWatch to true, feature is PreAlpha at emulated version 1.34, min compatibility version 1.33");
        assert_eq!(flags("", "Foo").err().unwrap(), "missing bool value for Foo");
        assert_eq!(flags("", "CBORServingAndStorage=yes").err().unwrap(), "invalid value of CBORServingAndStorage=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax");
        assert_eq!(
            flags("", "DynamicResourceAllocation=false").err().unwrap(),
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true"
        );
        assert!(flags("", "DRAConsumableCapacity=true").is_ok());
    }

    #[test]
    fn forward_compatibility_is_kube_apiserver_s() {
        let map = "mutatingadmissionpolicies";
        let g = "admissionregistration.k8s.io";
        let resources = || [(g, "v1", map, Some(Version::new(1, 36))), (g, "v1beta1", map, Some(Version::new(1, 34))), (g, "v1", "validatingwebhookconfigurations", None)].into_iter();
        let config = |flag: &str| RuntimeConfig::parse(flag, false).unwrap();
        let at = |v: &str| flags(v, "").unwrap().0;
        assert_eq!(
            at("").with_apis(config(""), true, false, resources()).err().unwrap(),
            "ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version"
        );
        assert_eq!(
            at("1.35").with_apis(config("admissionregistration.k8s.io/v1/mutatingadmissionpolicies=true"), false, false, resources()).err().unwrap(),
            "cannot enable resource admissionregistration.k8s.io/v1, Resource=mutatingadmissionpolicies in runtime-config because it is introduced at 1.36 after the current version 1.35. Consider setting --runtime-config-emulation-forward-compatible=true"
        );
        // Named on, and allowed to be newer.
        let f = at("1.35").with_apis(config("admissionregistration.k8s.io/v1/mutatingadmissionpolicies=true"), false, true, resources()).unwrap();
        assert!(f.serves(g, "v1", map, Some(Version::new(1, 36)), false));
        // Following an older beta version that is served.
        let f = at("1.35").with_apis(config("admissionregistration.k8s.io/v1beta1=true"), true, false, resources()).unwrap();
        assert!(f.serves(g, "v1beta1", map, Some(Version::new(1, 34)), false));
        assert!(f.serves(g, "v1", map, Some(Version::new(1, 36)), true));
        assert!(!f.serves(g, "v1", map, Some(Version::new(1, 36)), false), "not without an older version served");
        let f = at("1.35").with_apis(config("admissionregistration.k8s.io/v1beta1=true"), false, false, resources()).unwrap();
        assert!(!f.serves(g, "v1", map, Some(Version::new(1, 36)), true), "not without the flag");
    }

    #[test]
    fn what_is_set_wins_and_warns() {
        let (f, warnings) = flags("", "CBORServingAndStorage=true,NoSuchGate=true,AllAlpha=false").unwrap();
        assert!(f.enabled("CBORServingAndStorage"));
        assert!(warnings.contains(&"unrecognized feature gate: NoSuchGate".to_string()), "{warnings:?}");
        let (f, warnings) = flags("", "AllBeta=false,APIResponseCompression=true").unwrap();
        assert!(f.enabled("APIResponseCompression") && !f.enabled("WatchList"), "the toggle sets only what is not named");
        assert!(warnings.iter().all(|w| !w.contains("APIResponseCompression")), "{warnings:?}");
        let (_, warnings) = flags("1.35", "HPAScaleToZero=true").unwrap();
        assert!(warnings.iter().any(|w| w.starts_with("component has alpha features enabled in emulated version")), "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("HPAScaleToZero is accepted but not implemented")), "{warnings:?}");
    }

    #[test]
    fn every_implemented_gate_is_known() {
        for name in IMPLEMENTED {
            assert!(GATES.contains_key(name), "{name}");
        }
    }
}
