//! A static type check of a CEL expression against the types of the variables it names, as
//! cel-go's checker reports it: fields an object's schema does not declare (`undefined field
//! 'maxRetries'`), operators applied to types they have no overload for (`found no matching
//! overload for '_>_' applied to '(int, string)'`) and names nothing declares, each at its place
//! in the source. What is only known when evaluated (`dyn`: int-or-string fields, fields that
//! keep unknown fields, what unknown functions return) is never held against an expression.

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::parser::Parser;

use super::issues;
use super::types::Ty;

/// The type `source` evaluates to with `vars` declared, or every issue found, each as cel-go
/// displays it (`ERROR: <input>:1:22: ...`, the source line, a caret under the place), one
/// after another.
pub fn check(source: &str, vars: &[(&str, Ty)]) -> Result<Ty, String> {
    let (expr, info) = Parser::default().parse_with_source_info(source).map_err(|e| issues::syntax(source, &e))?;
    let mut checker = Checker { scopes: vars.iter().map(|(n, t)| (n.to_string(), t.clone())).collect(), issues: Vec::new() };
    let ty = checker.expr(&expr);
    if checker.issues.is_empty() {
        return Ok(ty);
    }
    let at = |id: u64| info.offset_for(id).map_or(0, |(start, _)| start as usize);
    // Sorted by place, as cel-go sorts them.
    checker.issues.sort_by_key(|(id, _)| at(*id));
    Err(checker.issues.iter().map(|(id, message)| issues::display_at(source, at(*id), message)).collect::<Vec<_>>().join("\n"))
}

struct Checker {
    /// Declared names, innermost last.
    scopes: Vec<(String, Ty)>,
    issues: Vec<(u64, String)>,
}

/// The names of CEL's types, which are values of type `type`.
const TYPE_NAMES: &[&str] = &["bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type", "dyn"];

impl Checker {
    fn issue(&mut self, id: u64, message: String) -> Ty {
        self.issues.push((id, message));
        Ty::Dyn
    }

    fn lookup(&self, name: &str) -> Option<Ty> {
        self.scopes.iter().rev().find(|(n, _)| n == name).map(|(_, t)| t.clone())
    }

    fn expr(&mut self, e: &IdedExpr) -> Ty {
        match &e.expr {
            Expr::Literal(l) => literal(l),
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => t,
                None if TYPE_NAMES.contains(&name.as_str()) => Ty::Type,
                None => self.issue(e.id, format!("undeclared reference to '{name}' (in container '')")),
            },
            Expr::Select(s) => {
                let operand = self.expr(&s.operand);
                let field = match operand {
                    Ty::Object(o) => match o.field(&s.field) {
                        Some(t) => t,
                        None => self.issue(e.id, format!("undefined field '{}'", s.field)),
                    },
                    Ty::Map(_, v) => *v,
                    t if t.is_scalar() => self.issue(e.id, format!("type '{t}' does not support field selection")),
                    _ => Ty::Dyn,
                };
                if s.test {
                    Ty::Bool
                } else {
                    field
                }
            }
            Expr::Call(c) => {
                // `sets.contains(a, b)`, `strings.quote(s)`, `optional.of(x)`: a function of a
                // library's namespace, not a member call on a variable.
                let namespaced = c.target.as_deref().and_then(|t| match &t.expr {
                    Expr::Ident(name) if self.lookup(name).is_none() => Some(name),
                    _ => None,
                });
                // `cel.bind(name, init, body)`: `body` sees `name` with the type of `init`.
                if let (Some("cel"), "bind", [name, init, body]) = (namespaced.map(String::as_str), c.func_name.as_str(), c.args.as_slice()) {
                    if let Expr::Ident(name) = &name.expr {
                        let init = self.expr(init);
                        self.scopes.push((name.clone(), init));
                        let result = self.expr(body);
                        self.scopes.pop();
                        return result;
                    }
                }
                let mut args: Vec<Ty> = match namespaced {
                    Some(_) => Vec::new(),
                    None => c.target.iter().map(|t| self.expr(t)).collect(),
                };
                args.extend(c.args.iter().map(|a| self.expr(a)));
                if namespaced.is_some() {
                    return returns(&c.func_name, false);
                }
                self.call(e.id, &c.func_name, c.target.is_some(), &args)
            }
            Expr::List(l) => {
                let items: Vec<Ty> = l.elements.iter().map(|x| self.expr(x)).collect();
                Ty::List(Box::new(common(&items)))
            }
            Expr::Map(m) => {
                let mut keys = Vec::new();
                let mut values = Vec::new();
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        keys.push(self.expr(&me.key));
                        values.push(self.expr(&me.value));
                    }
                }
                Ty::Map(Box::new(common(&keys)), Box::new(common(&values)))
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.expr(&f.value);
                    }
                }
                Ty::Dyn
            }
            Expr::Comprehension(c) => {
                let range = self.expr(&c.iter_range);
                let (first, second) = match (&range, &c.iter_var2) {
                    (Ty::List(item), None) => (*item.clone(), Ty::Dyn),
                    (Ty::List(item), Some(_)) => (Ty::Int, *item.clone()),
                    (Ty::Map(k, v), _) => (*k.clone(), *v.clone()),
                    _ => (Ty::Dyn, Ty::Dyn),
                };
                let init = self.expr(&c.accu_init);
                let depth = self.scopes.len();
                self.scopes.push((c.iter_var.clone(), first));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), second));
                }
                self.scopes.push((c.accu_var.clone(), init.clone()));
                self.expr(&c.loop_cond);
                let step = self.expr(&c.loop_step);
                self.scopes.truncate(depth);
                self.scopes.push((c.accu_var.clone(), init.join(&step)));
                let result = self.expr(&c.result);
                self.scopes.truncate(depth);
                result
            }
            Expr::Unspecified => Ty::Dyn,
        }
    }

    /// A call of `name` on `args` (the receiver first for a member call).
    fn call(&mut self, id: u64, name: &str, member: bool, args: &[Ty]) -> Ty {
        if let ("_+_", [Ty::List(a), Ty::List(b)]) = (name, args) {
            if !a.fits(b) {
                return self.no_overload(id, name, args);
            }
            return Ty::List(Box::new(a.join(b)));
        }
        if let Some(overloads) = operator(name) {
            return self.resolve(id, name, args, &overloads);
        }
        match (name, args) {
            ("_?_:_", [cond, a, b]) => {
                if !cond.fits(&Ty::Bool) || !a.fits(b) {
                    return self.no_overload(id, name, args);
                }
                a.join(b)
            }
            // Both sides of one type (numbers of any kind compare equal by value).
            ("_==_" | "_!=_", [a, b]) => {
                let numbers = |t: &Ty| matches!(t, Ty::Int | Ty::Uint | Ty::Double);
                if !(a.fits(b) || numbers(a) && numbers(b)) {
                    return self.no_overload(id, name, args);
                }
                Ty::Bool
            }
            ("@in", [item, container]) => {
                let fits = match container {
                    Ty::List(t) | Ty::Map(t, _) => item.fits(t),
                    t => !t.is_scalar(),
                };
                if !fits {
                    return self.no_overload(id, name, args);
                }
                Ty::Bool
            }
            ("_[_]", [container, index]) => match container {
                Ty::List(t) if index.fits(&Ty::Int) || index.fits(&Ty::Uint) => *t.clone(),
                Ty::Map(k, v) if index.fits(k) => *v.clone(),
                Ty::Dyn | Ty::Object(_) => Ty::Dyn,
                _ => self.no_overload(id, name, args),
            },
            ("size", [t]) => match t {
                Ty::String | Ty::Bytes | Ty::List(_) | Ty::Map(..) | Ty::Dyn => Ty::Int,
                _ => self.no_overload(id, name, args),
            },
            _ => returns(name, member),
        }
    }

    /// Picks the overloads whose parameters the arguments fit; none is an issue, and the
    /// result is known when every overload picked gives the same.
    fn resolve(&mut self, id: u64, name: &str, args: &[Ty], overloads: &[(Vec<Ty>, Ty)]) -> Ty {
        let picked: Vec<&Ty> = overloads.iter().filter(|(params, _)| params.len() == args.len() && args.iter().zip(params).all(|(a, p)| a.fits(p))).map(|(_, r)| r).collect();
        match picked.as_slice() {
            [] => self.no_overload(id, name, args),
            [first, rest @ ..] if rest.iter().all(|r| r == first) => (*first).clone(),
            _ => Ty::Dyn,
        }
    }

    fn no_overload(&mut self, id: u64, name: &str, args: &[Ty]) -> Ty {
        let types: Vec<String> = args.iter().map(Ty::to_string).collect();
        self.issue(id, format!("found no matching overload for '{name}' applied to '({})'", types.join(", ")))
    }
}

fn literal(l: &LiteralValue) -> Ty {
    match l {
        LiteralValue::Boolean(_) => Ty::Bool,
        LiteralValue::Bytes(_) => Ty::Bytes,
        LiteralValue::Double(_) => Ty::Double,
        LiteralValue::Int(_) => Ty::Int,
        LiteralValue::Null => Ty::Null,
        LiteralValue::String(_) => Ty::String,
        LiteralValue::UInt(_) => Ty::Uint,
    }
}

/// The type every item has, or `dyn`.
fn common(items: &[Ty]) -> Ty {
    match items.split_first() {
        Some((first, rest)) if rest.iter().all(|t| t == first) => first.clone(),
        _ => Ty::Dyn,
    }
}

/// The overloads of CEL's operators, as (parameters, result). Numbers of different kinds
/// compare with each other, as Kubernetes' environment allows.
fn operator(name: &str) -> Option<Vec<(Vec<Ty>, Ty)>> {
    use Ty::*;
    let same = |types: &[Ty], result: Option<Ty>| -> Vec<(Vec<Ty>, Ty)> {
        types.iter().map(|t| (vec![t.clone(), t.clone()], result.clone().unwrap_or_else(|| t.clone()))).collect()
    };
    let numbers = [Int, Uint, Double];
    let list = || List(Box::new(Dyn));
    Some(match name {
        "_&&_" | "_||_" => vec![(vec![Bool, Bool], Bool)],
        "!_" | "@not_strictly_false" => vec![(vec![Bool], Bool)],
        "-_" => vec![(vec![Int], Int), (vec![Double], Double)],
        "_<_" | "_<=_" | "_>_" | "_>=_" => {
            let mut o = same(&[Bool, String, Bytes, Timestamp, Duration], Some(Bool));
            for a in &numbers {
                for b in &numbers {
                    o.push((vec![a.clone(), b.clone()], Bool));
                }
            }
            o
        }
        "_+_" => {
            let mut o = same(&[Int, Uint, Double, String, Bytes, Duration], None);
            // Lists are joined above.
            o.push((vec![list(), list()], list()));
            o.push((vec![Timestamp, Duration], Timestamp));
            o.push((vec![Duration, Timestamp], Timestamp));
            o
        }
        "_-_" => {
            let mut o = same(&[Int, Uint, Double, Duration], None);
            o.push((vec![Timestamp, Timestamp], Duration));
            o.push((vec![Timestamp, Duration], Timestamp));
            o
        }
        "_*_" | "_/_" => same(&numbers, None),
        "_%_" => same(&[Int, Uint], None),
        _ => return None,
    })
}

/// What a function that is not an operator returns, where every overload returns the same
/// type; `dyn` for the others (their arguments are checked when evaluated).
fn returns(name: &str, member: bool) -> Ty {
    match name {
        "int" if !member => Ty::Int,
        "uint" if !member => Ty::Uint,
        "double" if !member => Ty::Double,
        "string" if !member => Ty::String,
        "bytes" if !member => Ty::Bytes,
        "bool" if !member => Ty::Bool,
        "duration" if !member => Ty::Duration,
        "timestamp" if !member => Ty::Timestamp,
        "type" if !member => Ty::Type,
        "matches" | "startsWith" | "endsWith" | "contains" | "isSorted" | "isURL" | "isIP" | "isCIDR" | "isQuantity" | "all" | "exists" | "exists_one" => Ty::Bool,
        "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring" | "charAt" | "join" | "format" | "quote" | "getScheme" | "getHost"
        | "getHostname" | "getPort" | "getEscapedPath" => Ty::String,
        "split" => Ty::List(Box::new(Ty::String)),
        _ => Ty::Dyn,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::expr::types::{of_schema, Definitions, Obj};

    fn deployment() -> Ty {
        let defs: Definitions = Arc::new(|_: &str| None);
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "paused": {"type": "boolean"},
                "containers": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            }},
            "metadata": {"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        }});
        of_schema("Deployment", &schema, &defs, true)
    }

    fn issues(source: &str) -> String {
        check(source, &[("object", deployment())]).unwrap_err()
    }

    #[test]
    fn well_typed_expressions_pass() {
        let vars = [("object", deployment()), ("variables", Ty::Object(Obj::Fields { name: "variables".into(), fields: Arc::new(BTreeMap::from([("n".to_string(), Ty::Int)])) }))];
        for ok in [
            "object.spec.replicas > 1",
            "object.spec.replicas > 1.5 && !object.spec.paused",
            "'wants ' + string(object.spec.replicas)",
            "object.spec.containers.all(c, c.name.startsWith('a'))",
            "object.spec.containers.map(c, c.name).exists(n, n == 'x')",
            "has(object.spec.replicas) ? object.spec.replicas : 0",
            "object.metadata.labels['app'] == 'web' && 'app' in object.metadata.labels",
            "size(object.spec.containers) == variables.n",
            "object.spec.replicas == null || object.kind == 'Deployment'",
            "[1, 2].all(x, x > 0) && {'a': 1}.a == 1 && type(1) == int",
            "sets.contains(['a'], ['a']) && strings.quote('x') != '' && optional.of(1).hasValue()",
            "cel.bind(n, object.spec.replicas, n > 1 && n < 10)",
        ] {
            assert!(check(ok, &vars).is_ok(), "{ok}: {:?}", check(ok, &vars));
        }
        assert_eq!(check("object.spec.containers.map(c, c.name)", &vars), Ok(Ty::List(Box::new(Ty::String))));
    }

    #[test]
    fn issues_are_worded_and_placed_as_cel_go_places_them() {
        assert_eq!(
            issues("object.spec.replicas > '1'"),
            "ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > '1'\n | .....................^"
        );
        assert!(issues("'wants replicas > 1, got ' + object.spec.replicas").contains("found no matching overload for '_+_' applied to '(string, int)'"));
        assert!(issues("object.spec.maxRetries < 10").contains("ERROR: <input>:1:12: undefined field 'maxRetries'"));
        assert!(issues("other.x").contains("undeclared reference to 'other'"));
        assert!(issues("object.spec.replicas.x").contains("type 'int' does not support field selection"));
        assert!(issues("object.spec.paused ? 1 : 'x'").contains("'_?_:_' applied to '(bool, int, string)'"));
        assert!(issues("object.spec.containers.exists(c, c.image == 'x')").contains("undefined field 'image'"));
        assert!(issues("cel.bind(n, object.spec.replicas, n == 'x')").contains("'_==_' applied to '(int, string)'"));
        // Two issues, one after the other.
        assert_eq!(issues("object.spec.x == 1 && object.spec.replicas + 'a' == 2").matches("ERROR:").count(), 2);
    }
}
