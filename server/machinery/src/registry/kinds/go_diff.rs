//! The diff Kubernetes prints when an update changes what it may not (`diff.Diff` of
//! apimachinery): both values as indented JSON (`go_json`), compared line by line with the
//! sequence matcher of go-difflib (Python's `difflib`, popular-line heuristic included) and
//! written as a unified diff with three lines of context and no file header.

use std::collections::HashMap;

use serde_json::Value;

use super::go_json;

/// The unified diff of `old` and `new`, both the served JSON of internal struct `struct_name`.
pub(crate) fn diff(old: &Value, new: &Value, struct_name: &str) -> String {
    let (a, b) = (lines(&go_json::indented(old, struct_name)), lines(&go_json::indented(new, struct_name)));
    unified(&a, &b, 3)
}

/// go-difflib's SplitLines: each line keeps its newline, the last one gets one.
fn lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    match out.last_mut() {
        Some(last) if !last.ends_with('\n') => last.push('\n'),
        Some(_) => out.push("\n".into()),
        None => out.push("\n".into()),
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Tag {
    Equal,
    Replace,
    Delete,
    Insert,
}

/// An opcode: what turns `a[i1..i2]` into `b[j1..j2]`.
#[derive(Clone, Copy)]
struct Op {
    tag: Tag,
    i1: usize,
    i2: usize,
    j1: usize,
    j2: usize,
}

/// difflib.SequenceMatcher over lines, without a junk function.
struct Matcher<'a> {
    a: &'a [String],
    b: &'a [String],
    /// Where each line of `b` occurs, popular lines (more than 1% of a long `b`) left out.
    b2j: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Matcher<'a> {
    fn new(a: &'a [String], b: &'a [String]) -> Self {
        let mut b2j: HashMap<&str, Vec<usize>> = HashMap::new();
        for (j, line) in b.iter().enumerate() {
            b2j.entry(line.as_str()).or_default().push(j);
        }
        if b.len() >= 200 {
            let most = b.len() / 100 + 1;
            b2j.retain(|_, at| at.len() <= most);
        }
        Matcher { a, b, b2j }
    }

    /// The longest matching block in `a[alo..ahi]` and `b[blo..bhi]`, earliest in `a` then `b`,
    /// extended over equal neighbours (popular lines included) as difflib does.
    fn longest_match(&self, alo: usize, ahi: usize, blo: usize, bhi: usize) -> (usize, usize, usize) {
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0);
        let mut j2len: HashMap<usize, usize> = HashMap::new();
        for i in alo..ahi {
            let mut next: HashMap<usize, usize> = HashMap::new();
            for &j in self.b2j.get(self.a[i].as_str()).map(Vec::as_slice).unwrap_or_default() {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = j.checked_sub(1).and_then(|p| j2len.get(&p)).copied().unwrap_or(0) + 1;
                next.insert(j, k);
                if k > bestsize {
                    (besti, bestj, bestsize) = (i + 1 - k, j + 1 - k, k);
                }
            }
            j2len = next;
        }
        while besti > alo && bestj > blo && self.a[besti - 1] == self.b[bestj - 1] {
            (besti, bestj, bestsize) = (besti - 1, bestj - 1, bestsize + 1);
        }
        while besti + bestsize < ahi && bestj + bestsize < bhi && self.a[besti + bestsize] == self.b[bestj + bestsize] {
            bestsize += 1;
        }
        (besti, bestj, bestsize)
    }

    fn matching_blocks(&self) -> Vec<(usize, usize, usize)> {
        let mut queue = vec![(0, self.a.len(), 0, self.b.len())];
        let mut blocks = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let (i, j, k) = self.longest_match(alo, ahi, blo, bhi);
            if k > 0 {
                blocks.push((i, j, k));
                if alo < i && blo < j {
                    queue.push((alo, i, blo, j));
                }
                if i + k < ahi && j + k < bhi {
                    queue.push((i + k, ahi, j + k, bhi));
                }
            }
        }
        blocks.sort_unstable();
        let mut collapsed: Vec<(usize, usize, usize)> = Vec::new();
        for (i, j, k) in blocks {
            match collapsed.last_mut() {
                Some((i1, j1, k1)) if *i1 + *k1 == i && *j1 + *k1 == j => *k1 += k,
                _ => collapsed.push((i, j, k)),
            }
        }
        collapsed.push((self.a.len(), self.b.len(), 0));
        collapsed
    }

    fn opcodes(&self) -> Vec<Op> {
        let (mut i, mut j) = (0, 0);
        let mut ops = Vec::new();
        for (ai, bj, size) in self.matching_blocks() {
            let tag = match (i < ai, j < bj) {
                (true, true) => Some(Tag::Replace),
                (true, false) => Some(Tag::Delete),
                (false, true) => Some(Tag::Insert),
                (false, false) => None,
            };
            if let Some(tag) = tag {
                ops.push(Op { tag, i1: i, i2: ai, j1: j, j2: bj });
            }
            (i, j) = (ai + size, bj + size);
            if size > 0 {
                ops.push(Op { tag: Tag::Equal, i1: ai, i2: i, j1: bj, j2: j });
            }
        }
        ops
    }

    /// The changes in groups with up to `n` lines of context.
    fn grouped(&self, n: usize) -> Vec<Vec<Op>> {
        let mut codes = self.opcodes();
        if codes.is_empty() {
            codes.push(Op { tag: Tag::Equal, i1: 0, i2: 1, j1: 0, j2: 1 });
        }
        if let Some(first) = codes.first_mut().filter(|c| c.tag == Tag::Equal) {
            first.i1 = first.i1.max(first.i2.saturating_sub(n));
            first.j1 = first.j1.max(first.j2.saturating_sub(n));
        }
        if let Some(last) = codes.last_mut().filter(|c| c.tag == Tag::Equal) {
            last.i2 = last.i2.min(last.i1 + n);
            last.j2 = last.j2.min(last.j1 + n);
        }
        let mut groups = Vec::new();
        let mut group = Vec::new();
        for c in codes {
            let mut c = c;
            if c.tag == Tag::Equal && c.i2 - c.i1 > 2 * n {
                group.push(Op { i2: c.i2.min(c.i1 + n), j2: c.j2.min(c.j1 + n), ..c });
                groups.push(std::mem::take(&mut group));
                c.i1 = c.i1.max(c.i2.saturating_sub(n));
                c.j1 = c.j1.max(c.j2.saturating_sub(n));
            }
            group.push(c);
        }
        if !group.is_empty() && !(group.len() == 1 && group[0].tag == Tag::Equal) {
            groups.push(group);
        }
        groups
    }
}

/// A hunk's range as difflib writes it: `start,length`, `start` alone for one line.
fn range(start: usize, stop: usize) -> String {
    let length = stop - start;
    match length {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        _ => format!("{},{length}", start + 1),
    }
}

fn unified(a: &[String], b: &[String], context: usize) -> String {
    let matcher = Matcher::new(a, b);
    let mut out = String::new();
    for group in matcher.grouped(context) {
        let (first, last) = (group[0], group[group.len() - 1]);
        out.push_str(&format!("@@ -{} +{} @@\n", range(first.i1, last.i2), range(first.j1, last.j2)));
        for op in group {
            if op.tag == Tag::Equal {
                a[op.i1..op.i2].iter().for_each(|l| out.push_str(&format!(" {l}")));
                continue;
            }
            if matches!(op.tag, Tag::Replace | Tag::Delete) {
                a[op.i1..op.i2].iter().for_each(|l| out.push_str(&format!("-{l}")));
            }
            if matches!(op.tag, Tag::Replace | Tag::Insert) {
                b[op.j1..op.j2].iter().for_each(|l| out.push_str(&format!("+{l}")));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    #[test]
    fn one_changed_line_with_three_lines_of_context() {
        let a = owned(&["a", "b", "c", "d", "e", "f", "g", "h"]);
        let b = owned(&["a", "b", "c", "d", "X", "f", "g", "h"]);
        assert_eq!(unified(&a, &b, 3), "@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+X\n f\n g\n h\n");
    }

    #[test]
    fn distant_changes_make_two_hunks_and_insertions_count_from_the_line_before() {
        let a = owned(&["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]);
        let b = owned(&["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
        assert_eq!(unified(&a, &b, 1), "@@ -1 +1,2 @@\n+0\n 1\n@@ -9,2 +10 @@\n 9\n-10\n");
    }

    #[test]
    fn equal_values_have_no_diff() {
        let a = owned(&["same"]);
        assert_eq!(unified(&a, &a, 3), "");
    }
}
