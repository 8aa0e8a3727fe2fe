//! The cost of `x-kubernetes-validations` rules, as Kubernetes limits it.
//!
//! **The model** is cel-go's cost estimator with Kubernetes' library costs, walked over the
//! parsed expression: an identifier or a field selection on an object or map costs 1, a
//! constant 0, creating a list 10, a map 30; a call costs its arguments plus its own work, which
//! is 1 for most functions and grows with the sizes of the values for the others (string
//! equality, comparison, concatenation, `startsWith`, `contains` and the like traverse strings at
//! 0.1 per character, `matches` and `find` multiply that by a quarter of the regex's length, `in`
//! on a list is the list's size, the list library's functions traverse their list); `&&`, `||` and
//! `?:` cost their operands (the dearer branch); presence tests are free; a comprehension
//! (`all`, `exists`, `map`, ...) costs its range, its accumulator and its result, plus the number
//! of iterations times its condition and step.
//!
//! **Sizes.** Every value reached from `self` (or `oldSelf`) has a path through the schema
//! (`self.spec.items.@items.name`). Estimating a definition (static cost), the size at a path is
//! what the schema allows: `maxLength` (times 4, in bytes), `maxItems`, `maxProperties`, or when
//! absent the most the largest request (3 MiB) can hold given the smallest serialized element.
//! A rule on a node inside lists or maps runs once per element: its cost is multiplied by the
//! product of the enclosing `maxItems`/`maxProperties`, or, when one is missing, by the number of
//! the node's smallest serialized values that fit in a request. A rule (or messageExpression)
//! over 10,000,000 refuses the definition, as does a total over 100,000,000 for the whole
//! schema, with Kubernetes' causes and messages.
//!
//! **At write time** the `cel` crate tracks no cost, so evaluation is bounded differently: before
//! a rule runs, the same model is walked with the actual sizes of the value the rule sees (the
//! largest string, list or map found at each path, measured once per path), and the rule is
//! refused without being evaluated when that exceeds the per-call limit (1,000,000), or when it
//! exceeds what is left of the request's budget (10,000,000 over all rules of the object); no
//! rule runs after that. The figure is an upper bound of what cel-go would count running the
//! rule: it charges every iteration (no short-circuit) and, in a loop nested over uneven lists,
//! every inner list as the longest one.
//!
//! **Files.** `decl` holds the declarations derived from the schema and the sizes they allow,
//! `size` the vocabulary of sizes and paths, `types` the types costs depend on, `walk` the
//! estimator's walk over the expression, `library` the costs of library functions, `runtime`
//! the actual sizes and the object's budget, `limits` the check of a definition against
//! Kubernetes' limits; this file, the limits' values and [`Plan`], an expression's cost.

mod decl;
mod library;
mod limits;
mod runtime;
mod size;
mod types;
mod walk;

use std::sync::Arc;

use cel::common::ast::IdedExpr;
use serde_json::Value;

pub use decl::Decl;
use decl::Declared;
pub use limits::check_schema;
use runtime::Actual;
pub use runtime::{Budget, Overrun};
use size::Sizes;
use walk::Walker;

/// Kubernetes' limit on one evaluation of a rule (`PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Kubernetes' budget for all the rules of one object (`RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// The largest estimated cost of one expression (`StaticEstimatedCostLimit`).
const EXPRESSION_LIMIT: u64 = 10_000_000;
/// The largest estimated cost of all the rules of a schema (`StaticEstimatedCRDCostLimit`).
const SCHEMA_LIMIT: u64 = 100_000_000;
/// The largest request, which bounds what a schema leaves unbounded (`MaxRequestSizeBytes`).
const MAX_REQUEST: u64 = crate::yaml::MAX_REQUEST_BYTES as u64;
/// The longest string a request can hold (less its quotes).
const MAX_STRING: u64 = MAX_REQUEST - 2;

/// An expression's cost, compiled once per definition: its parsed form, and the declaration of
/// the node it runs on.
#[derive(Debug)]
pub struct Plan {
    expr: IdedExpr,
    decl: Option<Arc<Decl>>,
    optional_old_self: bool,
}

impl Plan {
    pub fn new(source: &str, decl: Option<Arc<Decl>>, optional_old_self: bool) -> Result<Plan, String> {
        let program = cel::Program::compile(source).map_err(|e| format!("compilation failed: {e}"))?;
        Ok(Plan { expr: program.expression().clone(), decl, optional_old_self })
    }

    fn cost<'a>(&'a self, sizes: impl Sizes<'a>) -> u64 {
        Walker::new(self.decl.as_deref(), self.optional_old_self, sizes).walk(&self.expr).cost
    }

    /// The worst cost of one evaluation the schema allows.
    pub fn estimated(&self) -> u64 {
        self.cost(Declared(self.decl.as_deref()))
    }

    /// The cost of evaluating it on `value` (and `old`), sizes measured on them.
    pub fn actual(&self, value: &Value, old: Option<&Value>) -> u64 {
        self.cost(Actual::new(Declared(self.decl.as_deref()), value, old))
    }

    /// How many times a rule on this node may run when an enclosing list or map is unbounded:
    /// as many of its smallest values (and a comma) as fit in a request.
    pub fn max_cardinality(&self) -> u64 {
        MAX_REQUEST / self.decl.as_ref().map_or(0, |d| d.min_size).saturating_add(1)
    }
}

/// Schemas and estimates the tests of these files share.
#[cfg(test)]
mod testing {
    use std::sync::Arc;

    use serde_json::{json, Value};

    use super::{Decl, Plan};
    use crate::crd::schema::Structural;

    /// A rule's estimated cost on a node of `schema` (not a resource's root).
    pub(super) fn estimate(schema: Value, rule: &str) -> u64 {
        let node = Structural::compile(&schema).unwrap();
        Plan::new(rule, Decl::of(&node, false).map(Arc::new), false).unwrap().estimated()
    }

    pub(super) fn array(items: Value, max: Option<u64>) -> Value {
        let mut a = json!({"type": "array", "items": items});
        if let Some(m) = max {
            a["maxItems"] = json!(m);
        }
        a
    }

    pub(super) fn string(max: Option<u64>) -> Value {
        let mut s = json!({"type": "string"});
        if let Some(m) = max {
            s["maxLength"] = json!(m);
        }
        s
    }
}
