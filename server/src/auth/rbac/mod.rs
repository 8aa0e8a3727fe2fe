//! Role-based access control: the rules, the index the apply path keeps, the default policy,
//! the aggregation controller and the escalation checks.

pub mod escalation;
pub mod index;
pub mod policy;
pub mod rules;

pub use index::RbacIndex;
