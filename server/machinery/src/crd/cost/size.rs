//! The vocabulary of sizes: ranges of sizes, entries of lists and maps, paths from a variable,
//! and what a path's values measure.

/// A range of sizes (characters, bytes, items or entries).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Size {
    pub(super) min: u64,
    pub(super) max: u64,
}

impl Size {
    pub(super) const UNKNOWN: Size = Size { min: 0, max: u64::MAX };

    pub(super) fn fixed(n: u64) -> Size {
        Size { min: n, max: n }
    }
    pub(super) fn add(self, other: Size) -> Size {
        Size { min: self.min.saturating_add(other.min), max: self.max.saturating_add(other.max) }
    }
    pub(super) fn mul(self, other: Size) -> Size {
        Size { min: self.min.saturating_mul(other.min), max: self.max.saturating_mul(other.max) }
    }
    pub(super) fn union(self, other: Size) -> Size {
        Size { min: self.min.min(other.min), max: self.max.max(other.max) }
    }
}

/// `n × factor`, rounded up, at most `u64::MAX`.
pub(super) fn factor(n: u64, factor: f64) -> u64 {
    let product = (n as f64 * factor).ceil();
    if product >= u64::MAX as f64 {
        u64::MAX
    } else {
        product as u64
    }
}

/// The sizes of a list's or map's keys (indexes) and values, when known.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub(super) list: bool,
    pub(super) key: Size,
    pub(super) val: Size,
}

pub(super) fn union_entries(a: Option<Entry>, b: Option<Entry>) -> Option<Entry> {
    let (a, b) = (a?, b?);
    Some(Entry { list: a.list, key: a.key.union(b.key), val: a.val.union(b.val) })
}

/// One step of a path from a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Seg<'a> {
    Var(&'a str),
    Field(&'a str),
    Items,
    Values,
    Keys,
    Indices,
}

pub(super) type Path<'a> = Vec<Seg<'a>>;

pub(super) fn extended<'a>(path: &[Seg<'a>], seg: Seg<'a>) -> Path<'a> {
    let mut extended = path.to_vec();
    extended.push(seg);
    extended
}

/// What a path's values measure, for estimating.
pub(super) trait Sizes<'a> {
    fn size(&self, path: &[Seg<'a>]) -> Option<Size>;
}
