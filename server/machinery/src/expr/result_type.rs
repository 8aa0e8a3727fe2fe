//! The type of an expression's result before it is evaluated, as cel-go's checker gives it, for
//! refusing an expression whose field needs another type (`must evaluate to bool but got dyn`).
//! It is the checker's type ([`super::check`]), except that `dyn` there also stands for "not
//! known here" (what a library function returns, say): `dyn` is only given where cel-go's is
//! `dyn` too, for a variable declared `dyn` and the fields, items and choices taken from one.

use cel::common::ast::{Expr, IdedExpr};
use cel::parser::Parser;

use super::check::check;
use super::types::Ty;

/// The type `source` evaluates to with `vars` declared, when it is known; `None` when the
/// expression does not parse, the checker finds issues, or the type is not known here.
pub fn result_type(source: &str, vars: &[(&str, Ty)]) -> Option<Ty> {
    match check(source, vars).ok()? {
        Ty::Dyn => {
            let expr = Parser::default().parse(source).ok()?;
            declared_dyn(&expr, vars).then_some(Ty::Dyn)
        }
        ty => Some(ty),
    }
}

/// Whether `e` is a variable declared `dyn`, or a field, an item or a choice of two taken from
/// such values, which cel-go types `dyn` as well.
fn declared_dyn(e: &IdedExpr, vars: &[(&str, Ty)]) -> bool {
    match &e.expr {
        Expr::Ident(name) => vars.iter().rev().find(|(n, _)| n == name).is_some_and(|(_, t)| *t == Ty::Dyn),
        Expr::Select(s) => !s.test && declared_dyn(&s.operand, vars),
        Expr::Call(c) if c.target.is_none() => match (c.func_name.as_str(), c.args.as_slice()) {
            ("_[_]", [container, _]) => declared_dyn(container, vars),
            ("_?_:_", [_, a, b]) => declared_dyn(a, vars) && declared_dyn(b, vars),
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_cel_go_knows_before_evaluating() {
        let vars = [("object", Ty::Dyn), ("name", Ty::String)];
        assert_eq!(result_type("object.metadata.name", &vars), Some(Ty::Dyn));
        assert_eq!(result_type("object.spec.items[0]", &vars), Some(Ty::Dyn));
        assert_eq!(result_type("object['a'] ? object.b : object.c", &vars), Some(Ty::Dyn));
        assert_eq!(result_type("object.metadata.name == 'x'", &vars), Some(Ty::Bool));
        assert_eq!(result_type("has(object.spec)", &vars), Some(Ty::Bool));
        assert_eq!(result_type("name", &vars), Some(Ty::String));
        assert_eq!(result_type("size(name)", &vars), Some(Ty::Int));
        assert_eq!(result_type("null", &vars), Some(Ty::Null));
        // What a function returns is not known here, nor is the type of what has issues.
        assert_eq!(result_type("object.metadata.name.someFunction()", &vars), None);
        assert_eq!(result_type("other.x", &vars), None);
        assert_eq!(result_type("name ==", &vars), None);
    }
}
