//! (in progress)
use super::ResourceInfo;
pub static RESOURCES: &[ResourceInfo] = &[];
