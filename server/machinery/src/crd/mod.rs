//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`): the definition's own defaults and
//! validation, the structural schemas its versions carry (pruning, defaults, CEL rules and their
//! cost), conversion between versions, and which custom resources each replica serves (from the
//! replicated definitions). Custom resources themselves go through the same handlers, storage,
//! watch cache and authorization as built-in kinds.

pub mod conversion;
pub mod cost;
pub mod definition;
pub mod fields;
#[cfg(test)]
mod fuzz;
pub mod jsonpath;
pub mod rules;
pub mod schema;
pub mod served;
