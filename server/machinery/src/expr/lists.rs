//! Kubernetes' CEL list library, which rules on custom resources use: `l.isSorted()`,
//! `l.sum()`, `l.min()`, `l.max()`, `l.indexOf(x)`, `l.lastIndexOf(x)`.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::support::{any, error, value};

/// Declares the library's functions.
pub fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], |a| value(is_sorted(&items(&a)?)?))?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], |a| value(sum(&items(&a)?)?))?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], |a| value(extreme(&items(&a)?, Ordering::Less, "min")?))?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], |a| value(extreme(&items(&a)?, Ordering::Greater, "max")?))?;
    env.add_member_overload("indexOf", "list_index_of", LIST_TYPE, vec![DYN_TYPE], |a| {
        let x = any(&a, 1)?;
        value(position(items(&a)?.iter().position(|v| *v == x)))
    })?;
    env.add_member_overload("lastIndexOf", "list_last_index_of", LIST_TYPE, vec![DYN_TYPE], |a| {
        let x = any(&a, 1)?;
        value(position(items(&a)?.iter().rposition(|v| *v == x)))
    })?;
    Ok(())
}

/// The receiver's items.
fn items(args: &[CowVal<'_, '_>]) -> Result<Arc<Vec<Value>>, ExecutionError> {
    match any(args, 0)? {
        Value::List(l) => Ok(l),
        _ => Err(error("list", "not a list")),
    }
}

fn compare(a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    a.partial_cmp(b).ok_or_else(|| error("isSorted", "the list's items cannot be compared"))
}

fn is_sorted(l: &[Value]) -> Result<bool, ExecutionError> {
    for pair in l.windows(2) {
        if compare(&pair[0], &pair[1])? == Ordering::Greater {
            return Ok(false);
        }
    }
    Ok(true)
}

fn sum(l: &[Value]) -> Result<Value, ExecutionError> {
    match l.first() {
        None => Ok(Value::Int(0)),
        Some(Value::Float(_)) => l.iter().try_fold(0.0, |acc, v| match v {
            Value::Float(f) => Ok(acc + f),
            _ => Err(error("sum", "the list mixes number types")),
        }).map(Value::Float),
        Some(Value::UInt(_)) => l.iter().try_fold(0u64, |acc, v| match v {
            Value::UInt(u) => acc.checked_add(*u).ok_or_else(|| error("sum", "overflow")),
            _ => Err(error("sum", "the list mixes number types")),
        }).map(Value::UInt),
        Some(_) => l.iter().try_fold(0i64, |acc, v| match v {
            Value::Int(i) => acc.checked_add(*i).ok_or_else(|| error("sum", "overflow")),
            _ => Err(error("sum", "the list's items are not numbers")),
        }).map(Value::Int),
    }
}

fn extreme(l: &[Value], keep: Ordering, name: &str) -> Result<Value, ExecutionError> {
    let mut best = l.first().ok_or_else(|| error(name, format!("{name} called on an empty list")))?;
    for v in &l[1..] {
        if compare(v, best)? == keep {
            best = v;
        }
    }
    Ok(best.clone())
}

fn position(at: Option<usize>) -> i64 {
    at.map_or(-1, |i| i as i64)
}

#[cfg(test)]
mod tests {
    use crate::expr::Expression;
    use serde_json::json;

    #[test]
    fn the_list_library_answers_as_kubernetes_does() {
        let l = json!([3, 1, 2]);
        let eval = |src: &str| Expression::parse(src).unwrap().eval(&[("l", &l), ("s", &json!([1, 2, 2]))]).unwrap();
        assert_eq!(eval("l.isSorted()"), cel::Value::Bool(false));
        assert_eq!(eval("s.isSorted()"), cel::Value::Bool(true));
        assert_eq!(eval("l.sum() + s.sum()"), cel::Value::Int(11));
        assert_eq!(eval("l.min() == 1 && l.max() == 3"), cel::Value::Bool(true));
        assert_eq!(eval("s.indexOf(2) == 1 && s.lastIndexOf(2) == 2 && l.indexOf(9) == -1"), cel::Value::Bool(true));
        // The strings library's functions of the same names.
        assert_eq!(eval("'abcb'.indexOf('b') == 1 && 'abcb'.lastIndexOf('b') == 3"), cel::Value::Bool(true));
        assert!(Expression::parse("[].min()").unwrap().eval(&[]).unwrap_err().to_string().contains("min called on an empty list"));
    }
}
