//! Kubernetes' CEL list library, which rules on custom resources use: `l.isSorted()`,
//! `l.sum()`, `l.min()`, `l.max()`, `l.indexOf(x)`, `l.lastIndexOf(x)`.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::extractors::This;
use cel::{Context, ExecutionError, Value};

/// The functions' names, to install them only for expressions that call one.
const NAMES: &[&str] = &["isSorted", "sum", "min", "max", "indexOf", "lastIndexOf"];

/// Whether `source` calls one of the functions.
pub fn used_by(source: &str) -> bool {
    NAMES.iter().any(|n| source.contains(&format!(".{n}(")))
}

/// Adds the functions to `context`.
pub fn install(context: &mut Context<'_, '_>) {
    let _ = context.add_function("isSorted", is_sorted);
    let _ = context.add_function("sum", sum);
    let _ = context.add_function("min", |This(l): This<Arc<Vec<Value>>>| extreme(&l, Ordering::Less, "min"));
    let _ = context.add_function("max", |This(l): This<Arc<Vec<Value>>>| extreme(&l, Ordering::Greater, "max"));
    let _ = context.add_function("indexOf", |This(l): This<Arc<Vec<Value>>>, x: Value| position(l.iter().position(|v| *v == x)));
    let _ = context.add_function("lastIndexOf", |This(l): This<Arc<Vec<Value>>>, x: Value| position(l.iter().rposition(|v| *v == x)));
}

fn compare(a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    a.partial_cmp(b).ok_or_else(|| ExecutionError::function_error("isSorted", "the list's items cannot be compared"))
}

fn is_sorted(This(l): This<Arc<Vec<Value>>>) -> Result<bool, ExecutionError> {
    for pair in l.windows(2) {
        if compare(&pair[0], &pair[1])? == Ordering::Greater {
            return Ok(false);
        }
    }
    Ok(true)
}

fn sum(This(l): This<Arc<Vec<Value>>>) -> Result<Value, ExecutionError> {
    match l.first() {
        None => Ok(Value::Int(0)),
        Some(Value::Float(_)) => l.iter().try_fold(0.0, |acc, v| match v {
            Value::Float(f) => Ok(acc + f),
            _ => Err(ExecutionError::function_error("sum", "the list mixes number types")),
        }).map(Value::Float),
        Some(Value::UInt(_)) => l.iter().try_fold(0u64, |acc, v| match v {
            Value::UInt(u) => acc.checked_add(*u).ok_or_else(|| ExecutionError::function_error("sum", "overflow")),
            _ => Err(ExecutionError::function_error("sum", "the list mixes number types")),
        }).map(Value::UInt),
        Some(_) => l.iter().try_fold(0i64, |acc, v| match v {
            Value::Int(i) => acc.checked_add(*i).ok_or_else(|| ExecutionError::function_error("sum", "overflow")),
            _ => Err(ExecutionError::function_error("sum", "the list's items are not numbers")),
        }).map(Value::Int),
    }
}

fn extreme(l: &[Value], keep: Ordering, name: &str) -> Result<Value, ExecutionError> {
    let mut best = l.first().ok_or_else(|| ExecutionError::function_error(name, format!("{name} called on an empty list")))?;
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
    }
}
