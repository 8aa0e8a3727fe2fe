//! The types of values, as far as costs depend on them, and the types of calls' results.

use super::decl::{Decl, DeclKind, Scalar};
use super::walk::Est;

/// A value's type, as far as costs depend on it.
#[derive(Debug, Clone)]
pub(super) enum Ty<'a> {
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
pub(super) enum Kind {
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
    pub(super) fn of(d: &'a Decl) -> Ty<'a> {
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

    pub(super) fn kind(&self) -> Kind {
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
    pub(super) fn may_be(&self, kinds: &[Kind]) -> bool {
        let own = self.kind();
        own == Kind::Dyn || kinds.contains(&own)
    }

    /// Whether CEL knows the size of a value of this type without looking (1).
    pub(super) fn is_scalar(&self) -> bool {
        match self {
            Ty::Optional(t) => t.is_scalar(),
            _ => matches!(self.kind(), Kind::Bool | Kind::Double | Kind::Duration | Kind::Int | Kind::Timestamp | Kind::Uint),
        }
    }

    /// A list's items, a map's values.
    pub(super) fn elem(&self) -> Ty<'a> {
        match self {
            Ty::List(t) | Ty::Map(t) => (**t).clone(),
            Ty::Schema(Decl { kind: DeclKind::List(e) | DeclKind::Map(e), .. }) => Ty::of(e),
            _ => Ty::Dyn,
        }
    }

    /// A list's items (the type parameter of Kubernetes' list functions).
    pub(super) fn list_elem(&self) -> Option<Ty<'a>> {
        (self.kind() == Kind::List).then(|| self.elem())
    }

    pub(super) fn field(&self, name: &str) -> Ty<'a> {
        match self {
            Ty::Schema(Decl { kind: DeclKind::Object(fields), .. }) => fields.get(name).map_or(Ty::Dyn, Ty::of),
            _ if self.kind() == Kind::Map => self.elem(),
            _ => Ty::Dyn,
        }
    }

    pub(super) fn opaque(&self) -> Option<&'static str> {
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

pub(super) const TEXT: &[Kind] = &[Kind::String, Kind::Bytes];
pub(super) const TIME_AND_NUMBERS: &[Kind] = &[Kind::Int, Kind::Uint, Kind::Double, Kind::Timestamp, Kind::Duration];
pub(super) const ORDERED: &[Kind] = &[Kind::Int, Kind::Uint, Kind::Double, Kind::Timestamp, Kind::Duration, Kind::Bool];

/// The type of a call's result, as far as costs depend on it.
pub(super) fn result_type<'a>(name: &str, target: Option<&Est<'a>>, args: &[Est<'a>]) -> Ty<'a> {
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
