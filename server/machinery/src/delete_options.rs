//! `DeleteOptions` as a delete reads them: preconditions, dry run, the grace period and the
//! propagation policy, with the finalizers the garbage collector acts on.

/// Delete preconditions and the propagation policy from `DeleteOptions`.
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    pub uid: Option<String>,
    pub resource_version: Option<u64>,
    pub dry_run: bool,
    /// `None`: the resource's default (Background: the garbage collector deletes dependents
    /// after the owner is gone).
    pub propagation: Option<Propagation>,
    /// `gracePeriodSeconds` (pods only; `None`: the pod's own).
    pub grace_period: Option<i64>,
    /// The body carries `preconditions`.
    pub preconditions: bool,
    /// `ignoreStoreReadErrorWithClusterBreakingPotential` (with its feature gate): remove an
    /// object that cannot be decoded.
    pub unsafe_delete: bool,
}

/// What happens to an object's dependents when it is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// They lose their owner reference and stay (the `orphan` finalizer holds the owner until done).
    Orphan,
    /// The owner goes at once; the garbage collector deletes them afterwards.
    Background,
    /// They are deleted first (the `foregroundDeletion` finalizer holds the owner until the
    /// dependents that block it are gone).
    Foreground,
}

/// The finalizers the garbage collector acts on.
pub const ORPHAN_FINALIZER: &str = "orphan";
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

impl Propagation {
    pub fn parse(s: &str) -> Option<Propagation> {
        match s {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }

    /// The policy's name, as `propagationPolicy` gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }
}
