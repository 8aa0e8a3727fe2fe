//! The walk over a parsed expression, cel-go's cost estimator: identifiers, selections,
//! literals, creations, comprehensions, and calls (their costs from the library).

use std::borrow::Cow;

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedEntryExpr, IdedExpr, LiteralValue, SelectExpr};

use super::decl::Decl;
use super::library::{extension, standard};
use super::size::{extended, union_entries, Entry, Path, Seg, Size, Sizes};
use super::types::{result_type, Kind, Ty};

const SELECT_COST: u64 = 1;
pub(super) const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;
const STRUCT_CREATE: u64 = 40;

/// What the walk knows of a node: its cost, size, entries' sizes, type and path.
#[derive(Debug, Clone)]
pub(super) struct Est<'a> {
    pub(super) cost: u64,
    pub(super) size: Option<Size>,
    pub(super) entry: Option<Entry>,
    pub(super) ty: Ty<'a>,
    pub(super) path: Option<Path<'a>>,
}

impl<'a> Est<'a> {
    fn new(cost: u64, ty: Ty<'a>) -> Est<'a> {
        Est { cost, size: None, entry: None, ty, path: None }
    }
    /// The size, or any size at all when unknown.
    pub(super) fn size_or_unknown(&self) -> Size {
        self.size.unwrap_or(Size::UNKNOWN)
    }
    pub(super) fn max(&self) -> u64 {
        self.size_or_unknown().max
    }
}

/// A variable a comprehension binds.
#[derive(Debug, Clone)]
struct Local<'a> {
    name: &'a str,
    ty: Ty<'a>,
    path: Option<Path<'a>>,
    size: Option<Size>,
    entry: Option<Entry>,
}

/// A function call's own cost (its arguments' added), result size and entries, and for an
/// index the step its path takes.
#[derive(Debug, Default)]
pub(super) struct Charge {
    pub(super) cost: u64,
    pub(super) size: Option<Size>,
    pub(super) entry: Option<Entry>,
    pub(super) index: Option<Seg<'static>>,
}

impl Charge {
    pub(super) fn cost(cost: u64) -> Charge {
        Charge { cost, ..Charge::default() }
    }
    pub(super) fn sized(cost: u64, size: Size) -> Charge {
        Charge { cost, size: Some(size), ..Charge::default() }
    }
}

/// The walk over an expression, with the sizes it is estimated for.
pub(super) struct Walker<'a, S> {
    root: Option<&'a Decl>,
    optional_old_self: bool,
    pub(super) sizes: S,
    locals: Vec<Local<'a>>,
}

impl<'a, S: Sizes<'a>> Walker<'a, S> {
    /// A walk over expressions on the node `root` (`oldSelf` optional or not), with `sizes`.
    pub(super) fn new(root: Option<&'a Decl>, optional_old_self: bool, sizes: S) -> Walker<'a, S> {
        Walker { root, optional_old_self, sizes, locals: Vec::new() }
    }

    pub(super) fn walk(&mut self, e: &'a IdedExpr) -> Est<'a> {
        match &e.expr {
            Expr::Literal(l) => literal(l),
            Expr::Ident(name) => self.ident(name),
            Expr::Select(s) => self.select(s),
            Expr::Call(c) => self.call(c),
            Expr::List(l) => self.list(&l.elements),
            Expr::Map(m) => self.map(&m.entries),
            Expr::Struct(s) => self.create_struct(&s.entries),
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::Unspecified => Est::new(0, Ty::Dyn),
        }
    }

    /// A node's size when nothing more precise is known: what its path holds, else 1 for a
    /// scalar (cel-go's order).
    fn sized(&self, ty: &Ty<'a>, path: Option<&Path<'a>>) -> Option<Size> {
        path.filter(|p| !p.is_empty()).and_then(|p| self.sizes.size(p)).or_else(|| ty.is_scalar().then_some(Size::fixed(1)))
    }

    fn ident(&self, name: &'a str) -> Est<'a> {
        if let Some(local) = self.locals.iter().rev().find(|l| l.name == name) {
            let size = self.sized(&local.ty, local.path.as_ref()).or(local.size);
            return Est { cost: SELECT_COST, size, entry: local.entry, ty: local.ty.clone(), path: local.path.clone() };
        }
        let ty = self.global(name);
        let path = vec![Seg::Var(name)];
        Est { cost: SELECT_COST, size: self.sized(&ty, Some(&path)), entry: None, ty, path: Some(path) }
    }

    fn global(&self, name: &str) -> Ty<'a> {
        let node = self.root.map_or(Ty::Dyn, Ty::of);
        match name {
            "self" => node,
            "oldSelf" if self.optional_old_self => Ty::Optional(Box::new(node)),
            "oldSelf" => node,
            "bool" | "int" | "uint" | "double" | "string" | "bytes" | "list" | "map" | "null_type" | "type" => Ty::Type,
            _ => Ty::Dyn,
        }
    }

    fn is_variable(&self, name: &str) -> bool {
        name == "self" || name == "oldSelf" || self.locals.iter().any(|l| l.name == name)
    }

    fn select(&mut self, s: &'a SelectExpr) -> Est<'a> {
        let operand = self.walk(&s.operand);
        if s.test {
            // Kubernetes does not charge presence tests.
            return Est { size: Some(Size::fixed(1)), ..Est::new(operand.cost, Ty::Bool) };
        }
        let charge = if matches!(operand.ty.kind(), Kind::Map | Kind::Struct) { SELECT_COST } else { 0 };
        let ty = operand.ty.field(&s.field);
        let mut path = operand.path.unwrap_or_default();
        path.push(Seg::Field(&s.field));
        Est { cost: operand.cost.saturating_add(charge), size: self.sized(&ty, Some(&path)), entry: None, ty, path: Some(path) }
    }

    /// `ns.f(...)` where `ns` is no variable is the function `ns.f`.
    fn qualified(&self, c: &'a CallExpr) -> (Cow<'a, str>, Option<&'a IdedExpr>) {
        match c.target.as_deref() {
            Some(IdedExpr { expr: Expr::Ident(ns), .. }) if !self.is_variable(ns) => (Cow::Owned(format!("{ns}.{}", c.func_name)), None),
            target => (Cow::Borrowed(c.func_name.as_str()), target),
        }
    }

    fn call(&mut self, c: &'a CallExpr) -> Est<'a> {
        let (name, target) = self.qualified(c);
        let args: Vec<Est<'a>> = c.args.iter().map(|a| self.walk(a)).collect();
        let target = target.map(|t| self.walk(t));
        let ty = result_type(&name, target.as_ref(), &args);
        let charge = self.function(&name, target.as_ref(), &args, &c.args);
        let path = charge.index.map(|seg| extended(args[0].path.as_deref().unwrap_or_default(), seg));
        let size = charge.size.or_else(|| self.sized(&ty, path.as_ref()));
        let cost = charge.cost.saturating_add(target.as_ref().map_or(0, |t| t.cost));
        Est { cost, size, entry: charge.entry, ty, path }
    }

    /// A call's cost but its target's: Kubernetes' and the extensions' functions first, then
    /// CEL's standard ones, 1 for the others; the arguments' costs added.
    fn function(&self, name: &str, target: Option<&Est<'a>>, args: &[Est<'a>], exprs: &'a [IdedExpr]) -> Charge {
        match (name, args) {
            ("_&&_" | "_||_", [l, r]) => return Charge::cost(l.cost.saturating_add(r.cost)),
            ("_?_:_", [c, t, f]) => return conditional(c, t, f),
            ("dyn", [a]) => return Charge { cost: a.cost.saturating_add(1), size: a.size, entry: a.entry, index: None },
            _ => {}
        }
        let mut charge = extension(name, target, args, exprs)
            .or_else(|| self.kubernetes(name, target, args, exprs))
            .or_else(|| standard(name, target, args))
            .unwrap_or(Charge::cost(1));
        charge.cost = args.iter().fold(charge.cost, |sum, a| sum.saturating_add(a.cost));
        charge
    }

    fn list(&mut self, elements: &'a [IdedExpr]) -> Est<'a> {
        let items: Vec<Est<'a>> = elements.iter().map(|e| self.walk(e)).collect();
        let cost = items.iter().fold(LIST_CREATE, |sum, i| sum.saturating_add(i.cost));
        let val = items.iter().map(Est::size_or_unknown).reduce(Size::union).unwrap_or(Size::fixed(0));
        let elem = items.first().map_or(Ty::Dyn, |i| i.ty.clone());
        Est {
            size: Some(Size::fixed(items.len() as u64)),
            entry: Some(Entry { list: true, key: Size::fixed(1), val }),
            ..Est::new(cost, Ty::List(Box::new(elem)))
        }
    }

    fn map(&mut self, entries: &'a [IdedEntryExpr]) -> Est<'a> {
        let mut cost = MAP_CREATE;
        let mut sizes: Option<(Size, Size)> = None;
        let mut elem = Ty::Dyn;
        for entry in entries {
            let EntryExpr::MapEntry(e) = &entry.expr else { continue };
            let (k, v) = (self.walk(&e.key), self.walk(&e.value));
            cost = cost.saturating_add(k.cost).saturating_add(v.cost);
            let (ks, vs) = (k.size_or_unknown(), v.size_or_unknown());
            sizes = Some(sizes.map_or((ks, vs), |(a, b)| (a.union(ks), b.union(vs))));
            elem = v.ty;
        }
        let (key, val) = sizes.unwrap_or((Size::fixed(0), Size::fixed(0)));
        Est { size: Some(Size::fixed(entries.len() as u64)), entry: Some(Entry { list: false, key, val }), ..Est::new(cost, Ty::Map(Box::new(elem))) }
    }

    fn create_struct(&mut self, entries: &'a [IdedEntryExpr]) -> Est<'a> {
        let mut cost = STRUCT_CREATE;
        for entry in entries {
            if let EntryExpr::StructField(f) = &entry.expr {
                cost = cost.saturating_add(self.walk(&f.value).cost);
            }
        }
        Est::new(cost, Ty::Struct)
    }

    fn comprehension(&mut self, c: &'a ComprehensionExpr) -> Est<'a> {
        let range = self.walk(&c.iter_range);
        let init = self.walk(&c.accu_init);
        let accu = Local { name: &c.accu_var, ty: init.ty.clone(), path: init.path.clone(), size: init.size, entry: init.entry };
        self.locals.push(accu);
        let bound = self.bind_iteration(c, &range);
        let (cond, step) = (self.walk(&c.loop_cond), self.walk(&c.loop_step));
        self.locals.truncate(self.locals.len() - bound);
        let result = self.walk(&c.result);
        self.locals.pop();
        let iterations = range.max();
        let per_iteration = step.cost.saturating_add(cond.cost);
        let cost = range.cost.saturating_add(init.cost).saturating_add(result.cost).saturating_add(iterations.saturating_mul(per_iteration));
        let builds = matches!(c.accu_init.expr, Expr::List(_) | Expr::Map(_));
        let size = match c.accu_init.expr {
            Expr::Literal(_) => init.size,
            _ if builds => Some(range.size_or_unknown()),
            _ => None,
        };
        let ty = if builds && step.ty.kind() == init.ty.kind() { step.ty } else { result.ty };
        let size = size.or_else(|| self.sized(&ty, None));
        Est { cost, size, entry: if builds { step.entry } else { None }, ty, path: None }
    }

    /// Binds a comprehension's iteration variables (as many as it returns) over `range`.
    fn bind_iteration(&mut self, c: &'a ComprehensionExpr, range: &Est<'a>) -> usize {
        let list = range.entry.map_or(range.ty.kind() == Kind::List, |e| e.list);
        let base = range.path.as_deref().unwrap_or_default();
        let at = |seg| Some(extended(base, seg));
        let (key_seg, key_ty) = if list { (Seg::Indices, Ty::Int) } else { (Seg::Keys, Ty::String) };
        let value_seg = if list { Seg::Items } else { Seg::Values };
        let key = |name| Local { name, ty: key_ty.clone(), path: at(key_seg), size: range.entry.map(|e| e.key), entry: None };
        let value = |name| Local { name, ty: range.ty.elem(), path: at(value_seg), size: range.entry.map(|e| e.val), entry: None };
        match &c.iter_var2 {
            Some(second) => {
                self.locals.push(key(&c.iter_var));
                self.locals.push(value(second));
                2
            }
            None if list => {
                self.locals.push(value(&c.iter_var));
                1
            }
            None => {
                self.locals.push(key(&c.iter_var));
                1
            }
        }
    }
}

fn literal<'a>(l: &LiteralValue) -> Est<'a> {
    let (size, ty) = match l {
        LiteralValue::String(s) => (s.inner().chars().count() as u64, Ty::String),
        LiteralValue::Bytes(b) => (b.inner().len() as u64, Ty::Bytes),
        LiteralValue::Boolean(_) => (1, Ty::Bool),
        LiteralValue::Int(_) => (1, Ty::Int),
        LiteralValue::UInt(_) => (1, Ty::Uint),
        LiteralValue::Double(_) => (1, Ty::Double),
        LiteralValue::Null => (1, Ty::Null),
    };
    Est { size: Some(Size::fixed(size)), ..Est::new(0, ty) }
}

pub(super) fn literal_int(e: &IdedExpr) -> Option<i64> {
    match &e.expr {
        Expr::Literal(LiteralValue::Int(i)) => Some(*i.inner()),
        _ => None,
    }
}

/// `c ? t : f`: the condition and the dearer branch.
fn conditional(c: &Est, t: &Est, f: &Est) -> Charge {
    Charge {
        cost: c.cost.saturating_add(t.cost.max(f.cost)),
        size: Some(t.size_or_unknown().union(f.size_or_unknown())),
        entry: union_entries(t.entry, f.entry),
        index: None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{array, estimate, string};

    #[test]
    fn comprehensions_cost_their_iterations() {
        // Kubernetes' figures: the largest request bounds what the schema does not.
        assert_eq!(estimate(array(json!({"type": "number"}), None), "self.all(x, true)"), 4718591);
        assert_eq!(estimate(array(json!({"type": "number"}), Some(10)), "self.all(x, true)"), 32);
        assert_eq!(estimate(array(string(None), None), "self.all(x, true)"), 3145727);
        assert_eq!(estimate(array(json!({"type": "boolean"}), Some(5)), "self.all(x, true)"), 17);
        assert_eq!(estimate(array(json!({"type": "number"}), Some(10)), "self.all(x, self.all(y, true))"), 352);
        assert_eq!(estimate(array(json!({"type": "number"}), Some(10)), "self.all(x, self.all(y, self.all(z, true)))"), 3552);
        let map = json!({"type": "object", "additionalProperties": {"type": "number"}});
        assert_eq!(estimate(map, "self.all(x, true)"), 1348169);
        let dates = json!({"type": "object", "additionalProperties": {"type": "string", "format": "date-time"}});
        assert_eq!(estimate(dates.clone(), "self.all(x, true)"), 349526);
        assert_eq!(estimate(dates, r#"self["a"] == self["b"]"#), 8);
    }

    #[test]
    fn indexes_follow_the_schema() {
        assert_eq!(estimate(array(json!({"type": "number"}), None), "self[1] == 0.0"), 2);
        assert_eq!(estimate(array(string(None), Some(8)), "self[1] == self[1]"), 314577);
        assert_eq!(estimate(array(json!({"x-kubernetes-int-or-string": true}), None), "self[0] == 5"), 3);
        let maps = array(json!({"type": "object", "additionalProperties": {"type": "number"}}), Some(12));
        assert_eq!(estimate(maps.clone(), "self[0].x > 2.0"), 4);
        assert_eq!(estimate(maps, "self.all(x, x.y == 25.2)"), 74);
        let strings = json!({"type": "object", "additionalProperties": string(None)});
        assert_eq!(estimate(strings, "self.all(x, x.contains(self[x]))"), 2752507);
        let ints = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        assert_eq!(estimate(ints, "oldSelf.size() == self.size()"), 5);
    }
}
