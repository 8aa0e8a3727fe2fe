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

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedEntryExpr, IdedExpr, LiteralValue, SelectExpr};
use serde_json::Value;

use super::schema::{Additional, Structural};
use crate::error::Cause;

/// Kubernetes' limit on one evaluation of a rule (`PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Kubernetes' budget for all the rules of one object (`RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// The largest estimated cost of one expression (`StaticEstimatedCostLimit`).
const EXPRESSION_LIMIT: u64 = 10_000_000;
/// The largest estimated cost of all the rules of a schema (`StaticEstimatedCRDCostLimit`).
const SCHEMA_LIMIT: u64 = 100_000_000;
/// The largest request, which bounds what a schema leaves unbounded (`MaxRequestSizeBytes`).
const MAX_REQUEST: u64 = 3 * 1024 * 1024;
/// The longest string a request can hold (less its quotes).
const MAX_STRING: u64 = MAX_REQUEST - 2;

const SELECT_COST: u64 = 1;
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;
const STRUCT_CREATE: u64 = 40;
const TRAVERSAL: f64 = 0.1;
const REGEX_LENGTH: f64 = 0.25;
/// The longest regex a named format has (`MaxNameFormatRegexSize`).
const FORMAT_REGEX: f64 = 128.0;
/// The longest format name (`MaxFormatSize`).
const FORMAT_SIZE: u64 = 64;

/// A schema node as CEL declares it: its kind, the most elements (characters, items,
/// properties) it may have, and its smallest serialized size.
#[derive(Debug)]
pub struct Decl {
    kind: DeclKind,
    max_elements: u64,
    min_size: u64,
}

#[derive(Debug)]
enum DeclKind {
    Object(BTreeMap<String, Decl>),
    List(Box<Decl>),
    Map(Box<Decl>),
    Scalar(Scalar),
}

#[derive(Debug, Clone, Copy)]
enum Scalar {
    Dyn,
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
}

/// The keys of a map: strings CEL declares with no size.
static MAP_KEY: Decl = Decl { kind: DeclKind::Scalar(Scalar::String), max_elements: 0, min_size: 2 };

impl Decl {
    /// The declaration of `s`, or none when CEL cannot see it (no type); `resource`: the root of
    /// a custom resource or of an embedded resource, which also has `apiVersion`, `kind` and
    /// `metadata.name`/`generateName`.
    pub fn of(s: &Structural, resource: bool) -> Option<Decl> {
        if s.int_or_string {
            return Some(Decl::scalar(Scalar::Dyn, s.max_length.map_or(MAX_STRING, |m| m.saturating_mul(4)), 1));
        }
        match s.type_.as_str() {
            "array" => Decl::list(s),
            "object" => match s.additional() {
                Some(values) => Decl::map(s, values),
                None => Some(Decl::object(s, resource)),
            },
            "string" => Some(Decl::string(s)),
            "boolean" => Some(Decl::scalar(Scalar::Bool, 0, 4)),
            "number" => Some(Decl::scalar(Scalar::Double, 0, 1)),
            "integer" => Some(Decl::scalar(Scalar::Int, 0, 1)),
            _ => None,
        }
    }

    fn scalar(scalar: Scalar, max_elements: u64, min_size: u64) -> Decl {
        Decl { kind: DeclKind::Scalar(scalar), max_elements, min_size }
    }

    fn list(s: &Structural) -> Option<Decl> {
        let items = s.items.as_deref()?;
        let elem = Decl::of(items, items.embedded_resource)?;
        let max = s.max_items.unwrap_or(MAX_STRING / elem.min_size.saturating_add(1));
        Some(Decl { kind: DeclKind::List(Box::new(elem)), max_elements: max, min_size: 2 })
    }

    fn map(s: &Structural, values: &Structural) -> Option<Decl> {
        let elem = Decl::of(values, values.embedded_resource)?;
        // A key of at least `""`, a colon and a comma.
        let max = s.max_properties.unwrap_or(MAX_STRING / elem.min_size.saturating_add(6));
        Some(Decl { kind: DeclKind::Map(Box::new(elem)), max_elements: max, min_size: 2 })
    }

    fn object(s: &Structural, resource: bool) -> Decl {
        let mut fields = BTreeMap::new();
        let mut min_size = 2;
        for (name, prop) in &s.properties {
            let Some(decl) = Decl::of(prop, prop.embedded_resource) else { continue };
            if s.required.contains(name) && prop.default.is_none() {
                min_size = (name.len() as u64).saturating_add(decl.min_size).saturating_add(4).saturating_add(min_size);
            }
            fields.insert(name.clone(), decl);
        }
        if resource {
            let string = || Decl::scalar(Scalar::String, MAX_STRING, 2);
            fields.insert("apiVersion".into(), string());
            fields.insert("kind".into(), string());
            let meta = BTreeMap::from([("name".to_string(), string()), ("generateName".to_string(), string())]);
            fields.insert("metadata".into(), Decl { kind: DeclKind::Object(meta), max_elements: 0, min_size: 2 });
        }
        Decl { kind: DeclKind::Object(fields), max_elements: 0, min_size }
    }

    fn string(s: &Structural) -> Decl {
        match s.format.as_str() {
            "byte" => Decl::scalar(Scalar::Bytes, s.max_length.unwrap_or(MAX_STRING), 2),
            "duration" => Decl::scalar(Scalar::Duration, 32, 3),
            "date" => Decl::scalar(Scalar::Timestamp, 12, 12),
            "date-time" => Decl::scalar(Scalar::Timestamp, 32, 21),
            _ => {
                let longest_enum =
                    || s.enum_.as_ref().filter(|e| !e.is_empty()).map(|e| e.iter().filter_map(Value::as_str).map(|v| v.len() as u64).max().unwrap_or(0));
                let max = s.max_length.map(|m| m.saturating_mul(4)).or_else(longest_enum).unwrap_or(MAX_STRING);
                Decl::scalar(Scalar::String, max, 2)
            }
        }
    }

    /// The declaration at `segs` below this one.
    fn at(&self, segs: &[Seg]) -> Option<&Decl> {
        segs.iter().try_fold(self, |d, seg| match (seg, &d.kind) {
            (Seg::Items | Seg::Values, DeclKind::List(elem) | DeclKind::Map(elem)) => Some(elem.as_ref()),
            (Seg::Keys, DeclKind::Map(_)) => Some(&MAP_KEY),
            (Seg::Field(name), DeclKind::Object(fields)) => fields.get(*name),
            _ => None,
        })
    }
}

/// A range of sizes (characters, bytes, items or entries).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Size {
    min: u64,
    max: u64,
}

impl Size {
    const UNKNOWN: Size = Size { min: 0, max: u64::MAX };

    fn fixed(n: u64) -> Size {
        Size { min: n, max: n }
    }
    fn add(self, other: Size) -> Size {
        Size { min: self.min.saturating_add(other.min), max: self.max.saturating_add(other.max) }
    }
    fn mul(self, other: Size) -> Size {
        Size { min: self.min.saturating_mul(other.min), max: self.max.saturating_mul(other.max) }
    }
    fn union(self, other: Size) -> Size {
        Size { min: self.min.min(other.min), max: self.max.max(other.max) }
    }
}

/// `n × factor`, rounded up, at most `u64::MAX`.
fn factor(n: u64, factor: f64) -> u64 {
    let product = (n as f64 * factor).ceil();
    if product >= u64::MAX as f64 {
        u64::MAX
    } else {
        product as u64
    }
}

/// The sizes of a list's or map's keys (indexes) and values, when known.
#[derive(Debug, Clone, Copy)]
struct Entry {
    list: bool,
    key: Size,
    val: Size,
}

fn union_entries(a: Option<Entry>, b: Option<Entry>) -> Option<Entry> {
    let (a, b) = (a?, b?);
    Some(Entry { list: a.list, key: a.key.union(b.key), val: a.val.union(b.val) })
}

/// One step of a path from a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Seg<'a> {
    Var(&'a str),
    Field(&'a str),
    Items,
    Values,
    Keys,
    Indices,
}

type Path<'a> = Vec<Seg<'a>>;

fn extended<'a>(path: &[Seg<'a>], seg: Seg<'a>) -> Path<'a> {
    let mut extended = path.to_vec();
    extended.push(seg);
    extended
}

/// What a path's values measure, for estimating.
trait Sizes<'a> {
    fn size(&self, path: &[Seg<'a>]) -> Option<Size>;
}

/// The sizes the schema allows. As Kubernetes does, the path's first step (its variable) is
/// skipped: every path starts at the rule's node.
struct Declared<'a>(Option<&'a Decl>);

impl<'a> Sizes<'a> for Declared<'a> {
    fn size(&self, path: &[Seg<'a>]) -> Option<Size> {
        let (_, rest) = path.split_first()?;
        let decl = self.0?.at(rest)?;
        Some(Size { min: 0, max: decl.max_elements })
    }
}

/// The sizes a value and its old value hold; other paths as declared.
struct Actual<'a> {
    declared: Declared<'a>,
    value: &'a Value,
    old: Option<&'a Value>,
    measured: RefCell<HashMap<Path<'a>, Size>>,
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

/// A value's type, as far as costs depend on it.
#[derive(Debug, Clone)]
enum Ty<'a> {
    Dyn,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    Type,
    /// Kubernetes' library types (`URL`, `IP`, `CIDR`, `Quantity`, `Semver`, `Format`).
    Opaque(&'static str),
    Optional(Box<Ty<'a>>),
    List(Box<Ty<'a>>),
    Map(Box<Ty<'a>>),
    /// A struct built in the expression.
    Struct,
    /// A schema's object, list or map.
    Schema(&'a Decl),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Dyn,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    Type,
    Opaque,
    Optional,
    List,
    Map,
    Struct,
}

impl<'a> Ty<'a> {
    fn of(d: &'a Decl) -> Ty<'a> {
        match d.kind {
            DeclKind::Scalar(Scalar::Dyn) => Ty::Dyn,
            DeclKind::Scalar(Scalar::Bool) => Ty::Bool,
            DeclKind::Scalar(Scalar::Int) => Ty::Int,
            DeclKind::Scalar(Scalar::Double) => Ty::Double,
            DeclKind::Scalar(Scalar::String) => Ty::String,
            DeclKind::Scalar(Scalar::Bytes) => Ty::Bytes,
            DeclKind::Scalar(Scalar::Duration) => Ty::Duration,
            DeclKind::Scalar(Scalar::Timestamp) => Ty::Timestamp,
            _ => Ty::Schema(d),
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Ty::Dyn => Kind::Dyn,
            Ty::Bool => Kind::Bool,
            Ty::Int => Kind::Int,
            Ty::Uint => Kind::Uint,
            Ty::Double => Kind::Double,
            Ty::String => Kind::String,
            Ty::Bytes => Kind::Bytes,
            Ty::Null => Kind::Null,
            Ty::Duration => Kind::Duration,
            Ty::Timestamp => Kind::Timestamp,
            Ty::Type => Kind::Type,
            Ty::Opaque(_) => Kind::Opaque,
            Ty::Optional(_) => Kind::Optional,
            Ty::List(_) => Kind::List,
            Ty::Map(_) => Kind::Map,
            Ty::Struct => Kind::Struct,
            Ty::Schema(d) => match d.kind {
                DeclKind::Object(_) => Kind::Struct,
                DeclKind::List(_) => Kind::List,
                DeclKind::Map(_) => Kind::Map,
                DeclKind::Scalar(_) => Ty::of(d).kind(),
            },
        }
    }

    /// Whether a value of this type may be of one of `kinds` (a dynamic one may be anything).
    fn may_be(&self, kinds: &[Kind]) -> bool {
        let own = self.kind();
        own == Kind::Dyn || kinds.contains(&own)
    }

    /// Whether CEL knows the size of a value of this type without looking (1).
    fn is_scalar(&self) -> bool {
        match self {
            Ty::Optional(t) => t.is_scalar(),
            _ => matches!(self.kind(), Kind::Bool | Kind::Double | Kind::Duration | Kind::Int | Kind::Timestamp | Kind::Uint),
        }
    }

    /// A list's items, a map's values.
    fn elem(&self) -> Ty<'a> {
        match self {
            Ty::List(t) | Ty::Map(t) => (**t).clone(),
            Ty::Schema(Decl { kind: DeclKind::List(e) | DeclKind::Map(e), .. }) => Ty::of(e),
            _ => Ty::Dyn,
        }
    }

    /// A list's items (the type parameter of Kubernetes' list functions).
    fn list_elem(&self) -> Option<Ty<'a>> {
        (self.kind() == Kind::List).then(|| self.elem())
    }

    fn field(&self, name: &str) -> Ty<'a> {
        match self {
            Ty::Schema(Decl { kind: DeclKind::Object(fields), .. }) => fields.get(name).map_or(Ty::Dyn, Ty::of),
            _ if self.kind() == Kind::Map => self.elem(),
            _ => Ty::Dyn,
        }
    }

    fn opaque(&self) -> Option<&'static str> {
        match self {
            Ty::Opaque(name) => Some(name),
            _ => None,
        }
    }

    /// The type of two values that may each be the result: theirs when they agree.
    fn either(a: &Ty<'a>, b: &Ty<'a>) -> Ty<'a> {
        match (a, b) {
            (Ty::List(x), Ty::List(y)) if x.kind() == Kind::Dyn => Ty::List(y.clone()),
            _ if a.kind() == b.kind() => a.clone(),
            _ => Ty::Dyn,
        }
    }
}

const TEXT: &[Kind] = &[Kind::String, Kind::Bytes];
const TIME_AND_NUMBERS: &[Kind] = &[Kind::Int, Kind::Uint, Kind::Double, Kind::Timestamp, Kind::Duration];
const ORDERED: &[Kind] = &[Kind::Int, Kind::Uint, Kind::Double, Kind::Timestamp, Kind::Duration, Kind::Bool];

/// What the walk knows of a node: its cost, size, entries' sizes, type and path.
#[derive(Debug, Clone)]
struct Est<'a> {
    cost: u64,
    size: Option<Size>,
    entry: Option<Entry>,
    ty: Ty<'a>,
    path: Option<Path<'a>>,
}

impl<'a> Est<'a> {
    fn new(cost: u64, ty: Ty<'a>) -> Est<'a> {
        Est { cost, size: None, entry: None, ty, path: None }
    }
    /// The size, or any size at all when unknown.
    fn size_or_unknown(&self) -> Size {
        self.size.unwrap_or(Size::UNKNOWN)
    }
    fn max(&self) -> u64 {
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
struct Charge {
    cost: u64,
    size: Option<Size>,
    entry: Option<Entry>,
    index: Option<Seg<'static>>,
}

impl Charge {
    fn cost(cost: u64) -> Charge {
        Charge { cost, ..Charge::default() }
    }
    fn sized(cost: u64, size: Size) -> Charge {
        Charge { cost, size: Some(size), ..Charge::default() }
    }
}

/// The walk over an expression, with the sizes it is estimated for.
struct Walker<'a, S> {
    root: Option<&'a Decl>,
    optional_old_self: bool,
    sizes: S,
    locals: Vec<Local<'a>>,
}

impl<'a, S: Sizes<'a>> Walker<'a, S> {
    fn walk(&mut self, e: &'a IdedExpr) -> Est<'a> {
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

    /// The size of the items of the list `list` (by its path).
    fn items_size(&self, list: &Est<'a>) -> Size {
        let path = list.path.as_ref().map(|p| extended(p, Seg::Items));
        path.and_then(|p| self.sizes.size(&p)).unwrap_or(Size::UNKNOWN)
    }

    /// Kubernetes' library (lists, strings, regexes, URLs, IPs, quantities, formats).
    fn kubernetes(&self, name: &str, target: Option<&Est<'a>>, args: &[Est<'a>], exprs: &'a [IdedExpr]) -> Option<Charge> {
        let text = |a: &Est| factor(a.max(), TRAVERSAL);
        Some(match (name, target, args) {
            ("isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf", Some(t), _) => Charge::cost(self.traversal(t)),
            ("url" | "jsonpatch.escapeKey", None, [a]) => Charge::sized(text(a), a.size_or_unknown()),
            ("lowerAscii" | "upperAscii" | "substring" | "trim", Some(t), _) => Charge::sized(text(t), t.size_or_unknown()),
            ("replace", Some(t), [from, to, ..]) => replace(t.size_or_unknown(), from.size_or_unknown(), to.size_or_unknown()),
            ("split", Some(t), _) => {
                let limit = exprs.get(1).and_then(literal_int).map(|n| n as u64);
                Charge::sized(factor(t.max(), 2.0 * TRAVERSAL), Size { min: 0, max: limit.unwrap_or(t.max()) })
            }
            ("join", Some(t), _) => self.join(t, args.first()),
            ("find" | "findAll", Some(t), [re, ..]) => {
                let cost = factor(t.max().saturating_add(1), TRAVERSAL).saturating_mul(factor(re.max(), REGEX_LENGTH));
                Charge::sized(cost, Size { min: 0, max: t.max() })
            }
            // A CIDR's address is one of its fields.
            ("ip", Some(_), _) => Charge::cost(1),
            ("ip" | "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver", _, [a, ..]) => Charge::cost(text(a)),
            ("ip.isCanonical", _, [a, ..]) => Charge::cost(factor(a.max(), 2.0 * TRAVERSAL)),
            // Comparing addresses of 4 to 16 bytes, parsing a string argument.
            ("containsIP", _, [a, ..]) => Charge::cost(4 + if a.ty.kind() == Kind::String { text(a) } else { 0 }),
            ("containsCIDR", _, [a, ..]) => Charge::cost(7 + if a.ty.kind() == Kind::String { text(a) } else { 0 }),
            ("validate", _, [a, ..]) => Charge::cost(factor(text(a), FORMAT_REGEX * REGEX_LENGTH)),
            _ => return None,
        })
    }

    /// The list functions' traversal: each item compared once (strings also traversed), or a
    /// string's characters.
    fn traversal(&self, t: &Est<'a>) -> u64 {
        match t.ty.list_elem() {
            Some(elem) => {
                let strings = if TEXT.contains(&elem.kind()) { factor(self.items_size(t).max, TRAVERSAL) } else { 0 };
                t.max().saturating_mul(strings.saturating_add(1))
            }
            None => factor(t.max(), TRAVERSAL),
        }
    }

    fn join(&self, t: &Est<'a>, separator: Option<&Est<'a>>) -> Charge {
        let list = t.size_or_unknown();
        let mut size = if t.ty.list_elem().is_some() { list.mul(self.items_size(t)) } else { Size::fixed(0) };
        if let Some(sep) = separator {
            let separators = Size { min: list.min.saturating_sub(1), max: list.max.saturating_sub(1) };
            size = size.add(sep.size_or_unknown().mul(separators));
        }
        Charge::sized(factor(size.max, TRAVERSAL), size)
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

fn literal_int(e: &IdedExpr) -> Option<i64> {
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

/// CEL's standard functions whose cost depends on sizes.
fn standard(name: &str, target: Option<&Est>, args: &[Est]) -> Option<Charge> {
    let text = |a: &Est| factor(a.max(), TRAVERSAL);
    Some(match (name, target, args) {
        ("_==_" | "_!=_", None, [l, r]) => Charge::cost(equality(l, r)),
        ("_<_" | "_<=_" | "_>_" | "_>=_", None, [l, r]) => Charge::cost(ordering(l, r)),
        ("_+_", None, [l, r]) => addition(l, r),
        ("@in", None, [_, r]) => Charge::cost(membership(r)),
        ("_[_]", None, [container, _]) => {
            let index = if container.ty.kind() == Kind::List { Seg::Items } else { Seg::Values };
            Charge { cost: 1, size: container.entry.map(|e| e.val), entry: None, index: Some(index) }
        }
        ("matches", Some(t), [re]) => Charge::cost(factor(t.max().saturating_add(1), TRAVERSAL).saturating_mul(factor(re.max(), REGEX_LENGTH))),
        ("contains", Some(t), [s]) if t.ty.may_be(&[Kind::String]) => Charge::cost(text(t).saturating_mul(text(s))),
        ("startsWith" | "endsWith", Some(_), [s]) => Charge::cost(text(s)),
        ("string", None, [a]) if a.ty.may_be(&[Kind::Bytes]) => {
            let size = a.size_or_unknown();
            Charge::sized(text(a), Size { min: size.min / 4, max: size.max })
        }
        ("bytes", None, [a]) if a.ty.may_be(&[Kind::String]) => {
            let size = a.size_or_unknown();
            Charge::sized(text(a), Size { min: size.min, max: size.max.saturating_mul(4) })
        }
        ("format", Some(t), _) => Charge::cost(text(t)),
        ("strings.quote", None, [a]) => {
            let size = a.size_or_unknown();
            Charge::sized(text(a), Size { min: size.min.saturating_add(2), max: size.max.saturating_mul(2).saturating_add(2) })
        }
        _ => return None,
    })
}

/// Equality: Kubernetes' types compare at a fixed cost, the others as far as the smaller of
/// the two goes.
fn equality(l: &Est, r: &Est) -> u64 {
    match (l.ty.opaque(), r.ty.opaque()) {
        (Some("Format"), Some("Format")) => factor(FORMAT_SIZE, TRAVERSAL),
        (Some("URL"), Some("URL")) => factor(r.size.map_or(1, |s| s.max), TRAVERSAL),
        (Some(a), Some(b)) if a == b => 1,
        _ => factor(l.max().min(r.max()), TRAVERSAL),
    }
}

/// `<` and the like: strings and bytes as equality, the others 1 (the dearer when the types
/// leave both possible).
fn ordering(l: &Est, r: &Est) -> u64 {
    let texts = (l.ty.may_be(TEXT) && r.ty.may_be(TEXT)).then(|| factor(l.max().min(r.max()), TRAVERSAL));
    let others = (l.ty.may_be(ORDERED) && r.ty.may_be(ORDERED)).then_some(1);
    texts.into_iter().chain(others).max().unwrap_or(1)
}

/// `+`: strings and bytes are copied, lists joined at a fixed cost; each overload the types
/// allow is counted, the dearest kept.
fn addition(l: &Est, r: &Est) -> Charge {
    let total = l.size_or_unknown().add(r.size_or_unknown());
    let both = |kinds: &[Kind]| l.ty.may_be(kinds) && r.ty.may_be(kinds);
    let overloads = [
        both(TEXT).then(|| (factor(total.max, TRAVERSAL), Some(total))),
        both(&[Kind::List]).then_some((1, Some(total))),
        both(TIME_AND_NUMBERS).then_some((1, None)),
    ];
    let mut charge = Charge::cost(1);
    for (i, (cost, size)) in overloads.into_iter().flatten().enumerate() {
        charge.cost = if i == 0 { cost } else { charge.cost.max(cost) };
        if let Some(s) = size {
            charge.size = Some(charge.size.map_or(s, |c| c.union(s)));
        }
    }
    if both(&[Kind::List]) {
        charge.entry = union_entries(l.entry, r.entry);
    }
    charge
}

/// `in`: a list is searched, a map looked up (the dearer when the type leaves both possible).
fn membership(r: &Est) -> u64 {
    match r.ty.kind() {
        Kind::List => factor(r.max(), 1.0),
        Kind::Dyn => factor(r.max(), 1.0).max(1),
        _ => 1,
    }
}

/// `s.replace(from, to)`: traversed twice; the result as long as the most replacements make it.
fn replace(s: Size, from: Size, to: Size) -> Charge {
    let times = |n: u64, by: u64| (n as f64 / by as f64).ceil() as u64;
    let (most, kept_most) = if from.min == 0 {
        (s.max.saturating_add(u64::from(s.max < u64::MAX)), s.max)
    } else if to.max <= from.min {
        (0, s.max)
    } else {
        (times(s.max, from.min), 0)
    };
    let (least, kept_least) = if from.max == 0 {
        (s.min.saturating_add(u64::from(s.min < u64::MAX)), s.min)
    } else if from.max <= to.min {
        (0, s.min)
    } else {
        (times(s.min, from.max), 0)
    };
    let size = Size { min: least, max: most }.mul(to).add(Size { min: kept_least, max: kept_most });
    Charge::sized(factor(s.max, 2.0 * TRAVERSAL), size)
}

/// The list and set extensions, which come with their own estimators.
fn extension(name: &str, target: Option<&Est>, args: &[Est], exprs: &[IdedExpr]) -> Option<Charge> {
    let int_at = |i: usize, default: u64| exprs.get(i).and_then(literal_int).map_or(default, |n| n.max(0) as u64);
    Some(match (name, target, args) {
        ("sets.contains" | "sets.intersects", None, [a, b]) => Charge::cost(factor(a.max().saturating_mul(b.max()), 1.0).saturating_add(1)),
        ("sets.equivalent", None, [a, b]) => Charge::cost(factor(a.max().saturating_mul(b.max()), 2.0).saturating_add(1)),
        ("slice", Some(t), [_, _]) => allocating(1.0, Size::fixed(int_at(1, t.max()).saturating_sub(int_at(0, 0)))),
        ("lists.range", None, [_]) => allocating(1.0, Size::fixed(int_at(0, u64::MAX))),
        ("reverse", Some(t), []) if t.ty.may_be(&[Kind::List]) => allocating(1.0, t.size_or_unknown()),
        ("flatten", Some(t), []) => allocating(1.0, t.size_or_unknown()),
        ("flatten", Some(t), [_]) => allocating(int_at(0, u64::MAX) as f64, t.size_or_unknown()),
        ("distinct", Some(t), []) => allocating(2.0, t.size_or_unknown().mul(t.size_or_unknown())),
        ("sort", Some(t), []) => {
            let strings = t.ty.list_elem().is_some_and(|e| TEXT.contains(&e.kind()));
            allocating(if strings { 2.0 + TRAVERSAL } else { 2.0 }, t.size_or_unknown().mul(t.size_or_unknown()))
        }
        _ => return None,
    })
}

/// A call that builds a list of `size`.
fn allocating(per_item: f64, size: Size) -> Charge {
    Charge::sized(factor(size.max, per_item).saturating_add(1 + LIST_CREATE), size)
}

/// The type of a call's result, as far as costs depend on it.
fn result_type<'a>(name: &str, target: Option<&Est<'a>>, args: &[Est<'a>]) -> Ty<'a> {
    let arg = |i: usize| args.get(i).map_or(Ty::Dyn, |a| a.ty.clone());
    let on = || target.map_or(Ty::Dyn, |t| t.ty.clone());
    match name {
        "_==_"
        | "_!=_"
        | "_<_"
        | "_<=_"
        | "_>_"
        | "_>=_"
        | "_&&_"
        | "_||_"
        | "!_"
        | "@in"
        | "@not_strictly_false"
        | "matches"
        | "contains"
        | "startsWith"
        | "endsWith"
        | "isSorted"
        | "hasValue"
        | "isQuantity"
        | "isSemver"
        | "isIP"
        | "isCIDR"
        | "isInteger"
        | "isGreaterThan"
        | "isLessThan"
        | "containsIP"
        | "containsCIDR"
        | "ip.isCanonical"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast"
        | "sets.contains"
        | "sets.intersects"
        | "sets.equivalent" => Ty::Bool,
        "size" | "int" | "indexOf" | "lastIndexOf" | "sign" | "asInteger" | "compareTo" | "major" | "minor" | "patch" | "prefixLength" | "family"
        | "getDate" | "getDayOfMonth" | "getDayOfWeek" | "getDayOfYear" | "getFullYear" | "getMonth" | "getHours" | "getMinutes" | "getSeconds"
        | "getMilliseconds" => Ty::Int,
        "uint" => Ty::Uint,
        "double" | "asApproximateFloat" => Ty::Double,
        "string"
        | "lowerAscii"
        | "upperAscii"
        | "trim"
        | "substring"
        | "replace"
        | "join"
        | "find"
        | "charAt"
        | "format"
        | "strings.quote"
        | "getScheme"
        | "getHost"
        | "getHostname"
        | "getPort"
        | "getEscapedPath"
        | "jsonpatch.escapeKey" => Ty::String,
        "bytes" => Ty::Bytes,
        "duration" => Ty::Duration,
        "timestamp" => Ty::Timestamp,
        "type" => Ty::Type,
        "split" | "findAll" => Ty::List(Box::new(Ty::String)),
        "lists.range" => Ty::List(Box::new(Ty::Int)),
        "_[_]" => arg(0).elem(),
        "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => arithmetic(name, &arg(0), &arg(1)),
        "-_" => arg(0),
        "_?_:_" => Ty::either(&arg(1), &arg(2)),
        "sum" | "min" | "max" => on().elem(),
        "value" | "orValue" => match on() {
            Ty::Optional(t) => *t,
            _ => Ty::Dyn,
        },
        "optional.of" | "optional.ofNonZeroValue" => Ty::Optional(Box::new(arg(0))),
        "slice" | "reverse" | "distinct" | "sort" | "flatten" => on(),
        "url" => Ty::Opaque("URL"),
        "ip" => Ty::Opaque("IP"),
        "cidr" | "masked" => Ty::Opaque("CIDR"),
        "quantity" | "add" | "sub" => Ty::Opaque("Quantity"),
        "semver" => Ty::Opaque("Semver"),
        _ if name.starts_with("format.") => Ty::Opaque("Format"),
        _ => Ty::Dyn,
    }
}

/// Arithmetic keeps its operands' type; time arithmetic mixes timestamps and durations.
fn arithmetic<'a>(op: &str, l: &Ty<'a>, r: &Ty<'a>) -> Ty<'a> {
    match (op, l.kind(), r.kind()) {
        ("_-_", Kind::Timestamp, Kind::Timestamp) => Ty::Duration,
        (_, Kind::Timestamp, Kind::Duration) | ("_+_", Kind::Duration, Kind::Timestamp) => Ty::Timestamp,
        _ => Ty::either(l, r),
    }
}

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
        let mut walker = Walker { root: self.decl.as_deref(), optional_old_self: self.optional_old_self, sizes, locals: Vec::new() };
        walker.walk(&self.expr).cost
    }

    /// The worst cost of one evaluation the schema allows.
    pub fn estimated(&self) -> u64 {
        self.cost(Declared(self.decl.as_deref()))
    }

    /// The cost of evaluating it on `value` (and `old`), sizes measured on them.
    pub fn actual(&self, value: &Value, old: Option<&Value>) -> u64 {
        let declared = Declared(self.decl.as_deref());
        self.cost(Actual { declared, value, old, measured: RefCell::default() })
    }

    /// How many times a rule on this node may run when an enclosing list or map is unbounded:
    /// as many of its smallest values (and a comma) as fit in a request.
    pub fn max_cardinality(&self) -> u64 {
        MAX_REQUEST / self.decl.as_ref().map_or(0, |d| d.min_size).saturating_add(1)
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

/// The estimated costs of a schema's rules against Kubernetes' limits: each rule's cost (times
/// the times it may run) and each messageExpression's against the per-expression limit, their
/// total against the schema's. `path` is the schema's (`...openAPIV3Schema`).
pub fn check_schema(schema: &Structural, path: &str) -> Vec<Cause> {
    let mut tally = Tally::default();
    let mut causes = Vec::new();
    check_node(schema, path, Some(1), &mut tally, &mut causes);
    if tally.total > SCHEMA_LIMIT {
        for (at, _) in &tally.most_expensive {
            causes.push(forbidden(at, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"));
        }
        causes.push(forbidden(path, &exceeds("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", tally.total, SCHEMA_LIMIT)));
    }
    causes
}

/// The children first, then the node's rules, as Kubernetes reports them; `cardinality`: how
/// many times the node may occur, unbounded when `None`.
fn check_node(node: &Structural, path: &str, cardinality: Option<u64>, tally: &mut Tally, causes: &mut Vec<Cause>) {
    let below = cardinality.and_then(|c| repeats(node).map(|r| c.saturating_mul(r)));
    for (key, child) in &node.properties {
        check_node(child, &format!("{path}.properties[{key}]"), below, tally, causes);
    }
    if let Some(Additional::Schema(child)) = &node.additional_properties {
        check_node(child, &format!("{path}.additionalProperties"), below, tally, causes);
    }
    if let Some(items) = node.items.as_deref() {
        check_node(items, &format!("{path}.items"), below, tally, causes);
    }
    for (i, rule) in node.rules.iter().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let times = cardinality.unwrap_or_else(|| rule.program.cost.max_cardinality());
        let cost = rule.program.cost.estimated().saturating_mul(times);
        if cost > EXPRESSION_LIMIT {
            causes.push(forbidden(&format!("{at}.rule"), &exceeds("estimated rule cost", cost, EXPRESSION_LIMIT)));
        }
        tally.observe(format!("{at}.rule"), cost);
        if let Some(message) = &rule.message {
            let cost = message.cost.estimated();
            if cost > EXPRESSION_LIMIT {
                causes.push(forbidden(&format!("{at}.messageExpression"), &exceeds("estimated messageExpression cost", cost, EXPRESSION_LIMIT)));
            }
            tally.observe(format!("{at}.messageExpression"), cost);
        }
    }
}

/// How many times each child of `node` may occur per occurrence of `node`: a list's items and a
/// map's values by their bound (none: unbounded), an object's properties once.
fn repeats(node: &Structural) -> Option<u64> {
    match node.type_.as_str() {
        "object" if node.additional_properties.is_some() => node.max_properties,
        "array" => node.max_items,
        _ => Some(1),
    }
}

/// The schema's total estimated cost, and its (at most 4) dearest expressions of at least 1% of
/// the schema's limit.
#[derive(Default)]
struct Tally {
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Tally {
    fn observe(&mut self, path: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < SCHEMA_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        self.most_expensive.sort_by_key(|(_, cost)| std::cmp::Reverse(*cost));
        self.most_expensive.truncate(4);
    }
}

fn forbidden(field: &str, message: &str) -> Cause {
    Cause::new("FieldValueForbidden", field, format!("Forbidden: {message}"))
}

/// Kubernetes' words for a cost over its limit.
fn exceeds(what: &str, cost: u64, limit: u64) -> String {
    let by = cost as f64 / limit as f64;
    let by = if by > 100.0 {
        "more than 100x".to_string()
    } else if by < 1.5 {
        format!("{by:.6}x")
    } else {
        format!("{by:.1}x")
    };
    format!("{what} exceeds budget by factor of {by} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A rule's estimated cost on a node of `schema` (not a resource's root).
    fn estimate(schema: Value, rule: &str) -> u64 {
        let node = Structural::compile(&schema).unwrap();
        Plan::new(rule, Decl::of(&node, false).map(Arc::new), false).unwrap().estimated()
    }

    fn array(items: Value, max: Option<u64>) -> Value {
        let mut a = json!({"type": "array", "items": items});
        if let Some(m) = max {
            a["maxItems"] = json!(m);
        }
        a
    }

    fn string(max: Option<u64>) -> Value {
        let mut s = json!({"type": "string"});
        if let Some(m) = max {
            s["maxLength"] = json!(m);
        }
        s
    }

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
    fn string_functions_traverse_their_strings() {
        assert_eq!(estimate(string(None), "self.contains('test')"), 314574);
        assert_eq!(estimate(string(Some(10)), "self.contains('test')"), 5);
        assert_eq!(estimate(string(None), "self.startsWith('test')"), 2);
        assert_eq!(estimate(string(None), r#"size(self + "hello") > size("hello")"#), 314578);
        assert_eq!(estimate(string(Some(4)), r#"size(self + "hello") > size("hello")"#), 7);
        assert_eq!(estimate(string(None), r#"self.matches("x")"#), 314574);
        assert_eq!(estimate(string(Some(50)), r#"self.matches("x")"#), 22);
        assert_eq!(estimate(string(None), r#""".matches("(((((((((())))))))))[0-9]")"#), 7);
        assert_eq!(estimate(string(Some(0)), r#"self == "x""#), 1);
        assert_eq!(estimate(string(None), r#"self == "x""#), 2);
        assert_eq!(estimate(string(None), "self.lowerAscii() == 'lower!'"), 314575);
        assert_eq!(estimate(string(None), "self.find('[0-9]+') == ''"), 629147);
        let enumerated = json!({"type": "string", "enum": ["A", "B", "C", "LongValue"]});
        assert_eq!(estimate(enumerated, "self.contains('A')"), 2);
        let int_or_string = json!({"x-kubernetes-int-or-string": true, "maxLength": 20});
        assert_eq!(estimate(int_or_string, "isQuantity(self)"), 9);
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

    #[test]
    fn kubernetes_library_costs() {
        let words = array(string(Some(10)), Some(10));
        assert_eq!(estimate(words.clone(), "self.join(' ') == 'aa bb'"), 43);
        assert_eq!(estimate(words, "self.isSorted() == true"), 52);
        assert_eq!(estimate(array(string(None), None), "self.join(' ') == 'aa bb'"), 329853068905);
        assert_eq!(estimate(array(string(None), None), "self.isSorted() == true"), 329854432052);
        let replaced = json!({"type": "object", "properties": {"str": string(None), "before": string(Some(2)), "after": string(Some(4))}});
        assert_eq!(estimate(replaced, "self.str.replace(self.before, self.after) == 'does not matter'"), 629154);
        let split = json!({"type": "object", "properties": {"str": string(Some(10)), "separator": string(Some(10))}});
        assert_eq!(estimate(split, "self.str.split(self.separator) == []"), 22);
    }

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

    fn causes(schema: Value) -> Vec<String> {
        let s = Structural::compile(&schema).unwrap();
        check_schema(&s, "spec.validation.openAPIV3Schema").into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn definitions_over_the_limits_are_refused() {
        // A rule on a node inside an unbounded list runs once per item that fits in a request.
        let nested = |max_items: Option<u64>| {
            let mut outer = array(array(string(None), max_items), max_items);
            outer["items"]["x-kubernetes-validations"] = json!([{"rule": "self.all(s, s == 'string constant')"}]);
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": outer}}}})
        };
        let refused = causes(nested(None));
        assert_eq!(refused[0], "spec.validation.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)");
        assert_eq!(refused[1], "spec.validation.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema");
        assert!(refused[2].starts_with("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x"), "{refused:?}");
        assert!(causes(nested(Some(100))).is_empty());

        // With maxItems only on the outer list: 10 × (1,048,575 × 6 + 2).
        let mut outer = array(array(string(Some(10)), None), Some(10));
        outer["items"]["x-kubernetes-validations"] = json!([{"rule": "self.all(s, s == 'string constant')"}]);
        let got = causes(json!({"type": "object", "properties": {"x": outer}}));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].contains("estimated rule cost exceeds budget by factor of 6.3x"), "{got:?}");

        // A messageExpression whose sizes are unknown.
        let f = json!({"type": "object", "properties": {"f": {"type": "array", "items": string(None),
            "x-kubernetes-validations": [{"rule": "true", "messageExpression": "string(self[0]) + string(self[1]) + string(self[2])"}]}}});
        let got = causes(f);
        let at = "spec.validation.openAPIV3Schema.properties[f].x-kubernetes-validations[0].messageExpression";
        assert_eq!(got[0], format!("{at}: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"));
        assert_eq!(got[1], format!("{at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"));
        assert!(got[2].starts_with("spec.validation.openAPIV3Schema: Forbidden:"), "{got:?}");
    }

    #[test]
    fn factors_are_worded_as_kubernetes_words_them() {
        assert!(exceeds("estimated rule cost", 12_500_000, EXPRESSION_LIMIT).contains("factor of 1.250000x"));
        assert!(exceeds("estimated rule cost", 25_000_000, EXPRESSION_LIMIT).contains("factor of 2.5x"));
        assert!(exceeds("estimated rule cost", u64::MAX, EXPRESSION_LIMIT).contains("factor of more than 100x"));
    }
}
