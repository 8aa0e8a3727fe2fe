//! Write-time costs: the sizes of the actual values a rule sees, and the object's budget.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use serde_json::Value;

use super::decl::Declared;
use super::size::{Path, Seg, Size, Sizes};
use super::{PER_CALL_LIMIT, RUNTIME_BUDGET};

/// The sizes a value and its old value hold; other paths as declared.
pub(super) struct Actual<'a> {
    declared: Declared<'a>,
    value: &'a Value,
    old: Option<&'a Value>,
    measured: RefCell<HashMap<Path<'a>, Size>>,
}

impl<'a> Actual<'a> {
    /// The sizes `value` and `old` hold, measured once per path; other paths as `declared`.
    pub(super) fn new(declared: Declared<'a>, value: &'a Value, old: Option<&'a Value>) -> Actual<'a> {
        Actual { declared, value, old, measured: RefCell::default() }
    }
}

impl<'a> Sizes<'a> for Actual<'a> {
    fn size(&self, path: &[Seg<'a>]) -> Option<Size> {
        let root = match path.first() {
            Some(Seg::Var("self")) => Some(self.value),
            Some(Seg::Var("oldSelf")) => self.old,
            _ => return self.declared.size(path),
        };
        if let Some(size) = self.measured.borrow().get(path) {
            return Some(*size);
        }
        let mut found: Option<Size> = None;
        if let Some(root) = root {
            visit(root, &path[1..], &mut |n| found = Some(found.map_or(Size::fixed(n), |f| f.union(Size::fixed(n)))));
        }
        let size = found.unwrap_or(Size::fixed(0));
        self.measured.borrow_mut().insert(path.to_vec(), size);
        Some(size)
    }
}

/// Calls `found` with the size of every value at `segs` below `v`.
fn visit(v: &Value, segs: &[Seg], found: &mut dyn FnMut(u64)) {
    let Some((seg, rest)) = segs.split_first() else {
        found(actual_size(v));
        return;
    };
    match (seg, v) {
        (Seg::Field(name), Value::Object(map)) => map.get(*name).into_iter().for_each(|c| visit(c, rest, found)),
        (Seg::Items, Value::Array(items)) => items.iter().for_each(|c| visit(c, rest, found)),
        (Seg::Values, Value::Object(map)) => map.values().for_each(|c| visit(c, rest, found)),
        (Seg::Keys, Value::Object(map)) if rest.is_empty() => map.keys().for_each(|k| found(k.chars().count() as u64)),
        // A list's index is an int: size 1.
        (Seg::Indices, Value::Array(items)) if rest.is_empty() && !items.is_empty() => found(1),
        _ => {}
    }
}

/// CEL's size of a value: characters, items or entries; 1 for the others.
fn actual_size(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.chars().count() as u64,
        Value::Array(a) => a.len() as u64,
        Value::Object(m) => m.len() as u64,
        _ => 1,
    }
}

/// What is left of an object's budget for its rules.
#[derive(Debug)]
pub struct Budget {
    remaining: Cell<u64>,
    exhausted: Cell<bool>,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget { remaining: Cell::new(RUNTIME_BUDGET), exhausted: Cell::new(false) }
    }
}

/// Why an expression may not run: past the per-call limit, or past what the budget has left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Overrun {
    CallLimit,
    Budget,
}

impl Budget {
    /// Whether an overrun stopped all rules.
    pub fn exhausted(&self) -> bool {
        self.exhausted.get()
    }

    /// Takes `cost` from the budget, or says why the expression may not run; after an overrun
    /// nothing more runs. Evaluation would stop just past the per-call limit: that much is what
    /// a too dear expression takes of the budget.
    pub fn charge(&self, cost: u64) -> Result<(), Overrun> {
        let remaining = self.remaining.get();
        let overrun = if cost.min(PER_CALL_LIMIT + 1) > remaining {
            Overrun::Budget
        } else if cost > PER_CALL_LIMIT {
            Overrun::CallLimit
        } else {
            self.remaining.set(remaining - cost);
            return Ok(());
        };
        self.exhausted.set(true);
        Err(overrun)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::super::testing::array;
    use super::super::{Decl, Plan};
    use super::*;
    use crate::crd::schema::Structural;

    #[test]
    fn actual_sizes_bound_the_runtime_cost() {
        let schema = json!({"type": "object", "properties": {"items": array(json!({"type": "integer"}), Some(725))}});
        let node = Structural::compile(&schema).unwrap();
        let plan = Plan::new("self.items.all(x, self.items.all(y, y == x))", Decl::of(&node, false).map(Arc::new), false).unwrap();
        assert_eq!(plan.estimated(), 2632478);
        let value = |n: usize| json!({"items": vec![20; n]});
        assert_eq!(plan.actual(&value(2), None), 2 * (2 + 1 + (2 * 6 + 3)) + 3);
        assert!(plan.actual(&value(725), None) > PER_CALL_LIMIT);
        // Strings measure their characters; a path the value lacks is empty.
        let plan =
            Plan::new("self.name.startsWith(self.prefix)", Decl::of(&Structural::compile(&json!({"type": "object"})).unwrap(), false).map(Arc::new), false)
                .unwrap();
        assert_eq!(plan.actual(&json!({"name": "a", "prefix": "x".repeat(95)}), None), 10 + 2 + 2);
        assert_eq!(plan.actual(&json!({}), None), 4);
    }

    #[test]
    fn the_budget_stops_all_rules_once_overrun() {
        let budget = Budget::default();
        assert_eq!(budget.charge(PER_CALL_LIMIT), Ok(()));
        assert_eq!(budget.charge(PER_CALL_LIMIT + 1), Err(Overrun::CallLimit));
        assert!(budget.exhausted());
        let budget = Budget::default();
        for _ in 0..9 {
            budget.charge(PER_CALL_LIMIT).unwrap();
        }
        assert_eq!(budget.charge(PER_CALL_LIMIT), Ok(()));
        assert_eq!(budget.charge(1), Err(Overrun::Budget));
    }
}
