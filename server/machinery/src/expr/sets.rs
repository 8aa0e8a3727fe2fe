//! cel-go's `sets` library, as Kubernetes enables it: `sets.contains(l, sub)`,
//! `sets.equivalent(a, b)` and `sets.intersects(a, b)`, lists taken as sets.

use cel::common::types::LIST_TYPE;
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::support::{error, value, Ret};

/// Declares the library's functions.
pub fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("sets.contains", "list_sets_contains_list", vec![LIST_TYPE, LIST_TYPE], |a| sets(a, |x, y| contains(x, y)))?;
    env.add_overload("sets.equivalent", "list_sets_equivalent_list", vec![LIST_TYPE, LIST_TYPE], |a| {
        sets(a, |x, y| Ok(contains(x, y)? && contains(y, x)?))
    })?;
    env.add_overload("sets.intersects", "list_sets_intersects_list", vec![LIST_TYPE, LIST_TYPE], |a| {
        sets(a, |x, y| {
            let y = items(y)?;
            Ok(items(x)?.iter().any(|i| y.iter().any(|j| j.equals(*i))))
        })
    })?;
    Ok(())
}

/// Answers `f` of the two list arguments.
fn sets<'b, 'v>(args: Vec<CowVal<'b, 'v>>, f: impl Fn(&dyn Val, &dyn Val) -> Result<bool, ExecutionError>) -> Ret<'b, 'v> {
    match args.as_slice() {
        [x, y] => value(f(x.as_ref(), y.as_ref())?),
        _ => Err(ExecutionError::invalid_argument_count(2, args.len())),
    }
}

/// The elements of a list.
fn items<'b, 'v>(list: &'b (dyn Val + 'v)) -> Result<Vec<&'b (dyn Val + 'v)>, ExecutionError> {
    let mut it = list.as_iterable().ok_or_else(|| error("sets", "not a list"))?.iter();
    let mut out = Vec::new();
    while let Some(item) = it.next() {
        out.push(item);
    }
    Ok(out)
}

/// Whether every element of `sub` equals one of `list`.
fn contains(list: &dyn Val, sub: &dyn Val) -> Result<bool, ExecutionError> {
    let list = items(list)?;
    Ok(items(sub)?.iter().all(|i| list.iter().any(|j| j.equals(*i))))
}

#[cfg(test)]
mod tests {
    use crate::expr::Expression;

    fn eval(src: &str) -> cel::Value {
        Expression::parse(src).unwrap().eval(&[]).unwrap()
    }

    #[test]
    fn lists_as_sets() {
        assert_eq!(eval("sets.contains([1, 2, 3], [3, 1]) && sets.contains([], []) && sets.contains([1], [])"), cel::Value::Bool(true));
        assert_eq!(eval("sets.contains([1, 2], [2, 4])"), cel::Value::Bool(false));
        assert_eq!(eval("sets.contains([1.0, 2u], [1, 2])"), cel::Value::Bool(true));
        assert_eq!(eval("sets.equivalent([1, 2, 2], [2, 1]) && !sets.equivalent([1], [1, 3])"), cel::Value::Bool(true));
        assert_eq!(eval("sets.intersects([1, 2], [5, 2]) && !sets.intersects([1], []) && !sets.intersects(['a'], ['b'])"), cel::Value::Bool(true));
    }
}
