//! Role-based access control: the rules, the index the apply path keeps, and the default policy.
//! (The aggregation controller and the escalation checks of admission are in the server.)

mod gated;
pub mod index;
pub mod policy;
pub mod rules;

pub use index::RbacIndex;
