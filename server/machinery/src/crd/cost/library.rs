//! The costs of library functions: Kubernetes' (lists, strings, regexes, URLs, IPs, quantities,
//! formats), cel-go's standard ones whose cost depends on sizes, and the list and set extensions.

use cel::common::ast::IdedExpr;

use super::size::{extended, factor, union_entries, Seg, Size, Sizes};
use super::types::{Kind, ORDERED, TEXT, TIME_AND_NUMBERS};
use super::walk::{literal_int, Charge, Est, Walker, LIST_CREATE};

const TRAVERSAL: f64 = 0.1;
const REGEX_LENGTH: f64 = 0.25;
/// The longest regex a named format has (`MaxNameFormatRegexSize`).
const FORMAT_REGEX: f64 = 128.0;
/// The longest format name (`MaxFormatSize`).
const FORMAT_SIZE: u64 = 64;

impl<'a, S: Sizes<'a>> Walker<'a, S> {
    /// The size of the items of the list `list` (by its path).
    fn items_size(&self, list: &Est<'a>) -> Size {
        let path = list.path.as_ref().map(|p| extended(p, Seg::Items));
        path.and_then(|p| self.sizes.size(&p)).unwrap_or(Size::UNKNOWN)
    }

    /// Kubernetes' library (lists, strings, regexes, URLs, IPs, quantities, formats).
    pub(super) fn kubernetes(&self, name: &str, target: Option<&Est<'a>>, args: &[Est<'a>], exprs: &'a [IdedExpr]) -> Option<Charge> {
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
            ("find" | "findAll", Some(t), [re, ..]) => Charge::sized(regex(t, re), Size { min: 0, max: t.max() }),
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
}

/// Traversing a string (or bytes) of `a`'s size.
fn text(a: &Est) -> u64 {
    factor(a.max(), TRAVERSAL)
}

/// Matching the regex `re` on `t`: its traversal times a quarter of the regex's length.
fn regex(t: &Est, re: &Est) -> u64 {
    factor(t.max().saturating_add(1), TRAVERSAL).saturating_mul(factor(re.max(), REGEX_LENGTH))
}

/// CEL's standard functions whose cost depends on sizes.
pub(super) fn standard(name: &str, target: Option<&Est>, args: &[Est]) -> Option<Charge> {
    Some(match (name, target, args) {
        ("_==_" | "_!=_", None, [l, r]) => Charge::cost(equality(l, r)),
        ("_<_" | "_<=_" | "_>_" | "_>=_", None, [l, r]) => Charge::cost(ordering(l, r)),
        ("_+_", None, [l, r]) => addition(l, r),
        ("@in", None, [_, r]) => Charge::cost(membership(r)),
        ("_[_]", None, [container, _]) => {
            let index = if container.ty.kind() == Kind::List { Seg::Items } else { Seg::Values };
            Charge { cost: 1, size: container.entry.map(|e| e.val), entry: None, index: Some(index) }
        }
        ("matches", Some(t), [re]) => Charge::cost(regex(t, re)),
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
pub(super) fn extension(name: &str, target: Option<&Est>, args: &[Est], exprs: &[IdedExpr]) -> Option<Charge> {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{array, estimate, string};

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
}
