//! The register model and the linearizability search over one key's operations: Wing & Gong's
//! depth-first search with Lowe's memo of (linearized set, state) pairs, as in Porcupine.

use std::collections::{BTreeSet, HashMap};

use crate::history::{Call, Op, Ret};

/// The state token of an absent key.
const ABSENT: u32 = 0;
/// The state token of every value that no read or CAS ever looks for: they are interchangeable.
const ANON: u32 = 1;

/// One operation handed to the search.
#[derive(Debug, Clone, Copy)]
pub(super) struct Part<'a> {
    pub op: &'a Op,
    /// May take effect at any time after its invoke, or never (an unknown or still running write).
    pub optional: bool,
}

/// What the key held before the first operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start<'a> {
    Absent,
    Value(&'a str),
    /// A value that no operation reads or expects.
    Other,
}

/// Whether the answer is one this call can give.
pub(super) fn possible(op: &Op) -> bool {
    matches!(op.ret, Ret::Unknown { .. }) || effect(&op.call, &op.ret, |_| ANON).is_some()
}

/// Whether the call is a write that was acknowledged.
pub(super) fn acknowledged(op: &Op) -> bool {
    op.call.is_write() && op.ret == Ret::Done
}

/// The value an operation needs the key to hold: a CAS's expected one, or the one a read saw.
pub(super) fn looked_for(op: &Op) -> Option<&str> {
    match (&op.call, &op.ret) {
        (Call::Cas { expect, .. }, _) => Some(expect),
        (_, Ret::Read { value: Some(v) }) => Some(v),
        _ => None,
    }
}

/// The first `len` operations of a key's history (by invoke time) as the history stood when the
/// next one was invoked: operations still running then are optional if acknowledged writes, left
/// out if not. Unknown writes are always optional; reads that got no answer are left out.
pub(super) fn prefix<'a>(history: &[&'a Op], len: usize) -> Vec<Part<'a>> {
    let cut = history.get(len).map_or(u64::MAX, |op| op.invoke);
    history[..len]
        .iter()
        .filter_map(|&op| match (&op.ret, op.complete >= cut) {
            (Ret::Unknown { .. }, _) if op.call.is_write() => Some(Part { op, optional: true }),
            (Ret::Unknown { .. }, _) => None,
            (_, false) => Some(Part { op, optional: false }),
            (_, true) => acknowledged(op).then_some(Part { op, optional: true }),
        })
        .collect()
}

/// Whether the operations can be ordered, each at one instant inside its time window, so that the
/// register, holding one of `starts` at first, answers every required one as recorded.
pub(super) fn linearizable(parts: &[Part], starts: &[Start]) -> bool {
    Search::new(parts, starts).is_some_and(|search| search.run())
}

/// What an operation needs the state to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Pre {
    Absent,
    Present,
    Is(u32),
    /// Present with another value.
    IsNot(u32),
}

impl Pre {
    fn allows(self, state: u32) -> bool {
        match self {
            Pre::Absent => state == ABSENT,
            Pre::Present => state != ABSENT,
            Pre::Is(v) => state == v,
            Pre::IsNot(v) => state != ABSENT && state != v,
        }
    }
}

/// What an operation needs, and the state it leaves (`None`: unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Effect {
    pre: Pre,
    post: Option<u32>,
}

/// The register semantics of one call and answer; `None` when the answer is impossible.
fn effect(call: &Call, ret: &Ret, mut token: impl FnMut(&str) -> u32) -> Option<Effect> {
    let (pre, post) = match (call, ret) {
        (Call::Read { .. }, Ret::Read { value: None }) => (Pre::Absent, None),
        (Call::Read { .. }, Ret::Read { value: Some(v) }) => (Pre::Is(token(v)), None),
        (Call::Create { value, .. }, Ret::Done) => (Pre::Absent, Some(token(value))),
        (Call::Create { .. }, Ret::Conflict) => (Pre::Present, None),
        (Call::Cas { expect, value, .. }, Ret::Done) => (Pre::Is(token(expect)), Some(token(value))),
        (Call::Cas { expect, .. }, Ret::Conflict) => (Pre::IsNot(token(expect)), None),
        (Call::Cas { .. } | Call::Delete { .. }, Ret::NotFound) => (Pre::Absent, None),
        (Call::Delete { .. }, Ret::Done) => (Pre::Present, Some(ABSENT)),
        _ => return None,
    };
    Some(Effect { pre, post })
}

struct Node {
    invoke: u64,
    /// When it must have taken effect by.
    deadline: u64,
    effect: Effect,
}

/// A choice at one step: a required operation, or the next unused optional one of a class.
#[derive(Debug, Clone, Copy)]
enum Choice {
    Required(usize),
    Class(usize),
}

struct Frame {
    choices: Vec<Choice>,
    next: usize,
    /// The choice that led here and the state before it.
    undo: Option<(Choice, u32)>,
}

/// Where the search has been: the state and the linearized required operations (without their
/// settled beginning), each with the sets of used optional operations it was reached with. Having
/// used fewer is never worse (the used ones of a class are its earliest), so a set that holds one
/// already explored from there needs no search.
#[derive(Default)]
struct Memo(HashMap<(u32, usize, Bits), Vec<Bits>>);

/// A set of operations, a bit each.
type Bits = Box<[u64]>;

impl Memo {
    /// Records the search's state; false when it, or a better one, was there before.
    fn visit(&mut self, search: &Search, st: &State) -> bool {
        let trimmed = |words: &[u64]| -> Bits {
            let len = words.iter().rposition(|&w| w != 0).map_or(0, |i| i + 1);
            words[..len].into()
        };
        let from = (st.frontier / 64).min(st.required.len());
        let used = trimmed(&search.relevant(st));
        let sets = self.0.entry((st.value, st.frontier, trimmed(&st.required[from..]))).or_default();
        let within = |a: &[u64], b: &[u64]| a.iter().enumerate().all(|(i, w)| w & !b.get(i).copied().unwrap_or(0) == 0);
        if sets.iter().any(|before| within(before, &used)) {
            return false;
        }
        sets.retain(|before| !within(&used, before));
        sets.push(used);
        true
    }
}

struct Search {
    starts: Vec<u32>,
    /// Required operations by invoke time.
    required: Vec<Node>,
    optional: Vec<Node>,
    /// Optional operations with the same effect are interchangeable: only the earliest unused
    /// one of each class is ever chosen, so the used ones are a prefix of the class.
    classes: Vec<Vec<usize>>,
    /// By class, for those that need a value: the value and who writes it.
    expects: Vec<Option<Expect>>,
}

/// A value that a class of optional operations needs, and the operations that write it.
struct Expect {
    value: u32,
    required: Vec<usize>,
    optional: Vec<usize>,
}

/// Where the search stands.
struct State {
    value: u32,
    /// Every required operation before it is linearized.
    frontier: usize,
    required: Vec<u64>,
    optional: Vec<u64>,
    used: Vec<usize>,
}

impl Search {
    fn new(parts: &[Part], starts: &[Start]) -> Option<Search> {
        let looked_for: BTreeSet<&str> = parts.iter().filter_map(|p| looked_for(p.op)).collect();
        let tokens: HashMap<&str, u32> = looked_for.into_iter().zip(ANON + 1..).collect();
        let token = |v: &str| tokens.get(v).copied().unwrap_or(ANON);
        let starts = starts
            .iter()
            .map(|start| match start {
                Start::Absent => ABSENT,
                Start::Value(v) => token(v),
                Start::Other => ANON,
            })
            .collect();
        let (mut required, mut optional) = (Vec::new(), Vec::new());
        for p in parts {
            let invoke = p.op.invoke;
            match p.optional {
                true => optional.push(Node { invoke, deadline: u64::MAX, effect: effect(&p.op.call, &Ret::Done, token)? }),
                false => required.push(Node { invoke, deadline: p.op.complete, effect: effect(&p.op.call, &p.op.ret, token)? }),
            }
        }
        required.sort_by_key(|n| n.invoke);
        optional.sort_by_key(|n| n.invoke);
        let mut class_of: HashMap<Effect, usize> = HashMap::new();
        let mut classes: Vec<Vec<usize>> = Vec::new();
        for (i, node) in optional.iter().enumerate() {
            let next = classes.len();
            let c = *class_of.entry(node.effect).or_insert(next);
            if c == next {
                classes.push(Vec::new());
            }
            classes[c].push(i);
        }
        let writers = |nodes: &[Node], v: u32| (0..nodes.len()).filter(|&i| nodes[i].effect.post == Some(v)).collect();
        let expects = classes
            .iter()
            .map(|members| match optional[members[0]].effect.pre {
                Pre::Is(value) => Some(Expect { value, required: writers(&required, value), optional: writers(&optional, value) }),
                _ => None,
            })
            .collect();
        Some(Search { starts, required, optional, classes, expects })
    }

    /// A depth-first search from each start in turn; what lies ahead of a state does not depend
    /// on how it was reached, so they share one memo.
    fn run(&self) -> bool {
        let mut st = State {
            value: ABSENT,
            frontier: 0,
            required: vec![0; self.required.len().div_ceil(64)],
            optional: vec![0; self.optional.len().div_ceil(64)],
            used: vec![0; self.classes.len()],
        };
        if self.required.is_empty() {
            return !self.starts.is_empty();
        }
        let mut memo = Memo::default();
        for &start in &self.starts {
            st.value = start;
            if !memo.visit(self, &st) {
                continue;
            }
            let mut stack = vec![Frame { choices: self.choices(&st), next: 0, undo: None }];
            while let Some(top) = stack.last_mut() {
                let Some(&choice) = top.choices.get(top.next) else {
                    if let Some(undo) = stack.pop().and_then(|frame| frame.undo) {
                        self.undo(&mut st, undo);
                    }
                    continue;
                };
                top.next += 1;
                let undo = (choice, st.value);
                self.apply(&mut st, choice);
                if st.frontier == self.required.len() {
                    return true;
                }
                if memo.visit(self, &st) {
                    stack.push(Frame { choices: self.choices(&st), next: 0, undo: Some(undo) });
                } else {
                    self.undo(&mut st, undo);
                }
            }
        }
        false
    }

    /// The operations that may come next: invoked before every unlinearized required one must
    /// have completed, and allowed by the state. A required one that leaves the state as it is
    /// (a read, a failed write) is then the only choice: taking it at once loses nothing.
    fn choices(&self, st: &State) -> Vec<Choice> {
        let mut deadline = u64::MAX;
        let mut end = st.frontier;
        while end < self.required.len() && self.required[end].invoke <= deadline {
            if !get(&st.required, end) {
                deadline = deadline.min(self.required[end].deadline);
            }
            end += 1;
        }
        let ready = |n: &Node| n.invoke <= deadline && n.effect.pre.allows(st.value);
        let required: Vec<usize> = (st.frontier..end).filter(|&i| !get(&st.required, i) && ready(&self.required[i])).collect();
        if let Some(&read) = required.iter().find(|&&i| self.required[i].effect.post.is_none()) {
            return vec![Choice::Required(read)];
        }
        let optional = self.classes.iter().enumerate().filter_map(|(c, members)| {
            let &i = members.get(st.used[c])?;
            ready(&self.optional[i]).then_some(Choice::Class(c))
        });
        required.into_iter().map(Choice::Required).chain(optional).collect()
    }

    fn apply(&self, st: &mut State, choice: Choice) {
        let node = match choice {
            Choice::Required(i) => {
                set(&mut st.required, i, true);
                while st.frontier < self.required.len() && get(&st.required, st.frontier) {
                    st.frontier += 1;
                }
                &self.required[i]
            }
            Choice::Class(c) => {
                let i = self.classes[c][st.used[c]];
                st.used[c] += 1;
                set(&mut st.optional, i, true);
                &self.optional[i]
            }
        };
        st.value = node.effect.post.unwrap_or(st.value);
    }

    fn undo(&self, st: &mut State, (choice, value): (Choice, u32)) {
        match choice {
            Choice::Required(i) => {
                set(&mut st.required, i, false);
                st.frontier = st.frontier.min(i);
            }
            Choice::Class(c) => {
                st.used[c] -= 1;
                set(&mut st.optional, self.classes[c][st.used[c]], false);
            }
        }
        st.value = value;
    }

    /// The used optional operations that matter: not those of a class that can never apply again
    /// (its expected value is gone, and everything that writes it is used).
    fn relevant(&self, st: &State) -> Vec<u64> {
        let mut optional = st.optional.clone();
        for (c, members) in self.classes.iter().enumerate().filter(|&(c, _)| st.used[c] > 0) {
            let Some(expect) = &self.expects[c] else { continue };
            if st.value != expect.value
                && expect.required.iter().all(|&i| get(&st.required, i))
                && expect.optional.iter().all(|&i| get(&st.optional, i))
            {
                members[..st.used[c]].iter().for_each(|&i| set(&mut optional, i, false));
            }
        }
        optional
    }
}

fn get(bits: &[u64], i: usize) -> bool {
    bits[i / 64] >> (i % 64) & 1 == 1
}

fn set(bits: &mut [u64], i: usize, on: bool) {
    match on {
        true => bits[i / 64] |= 1 << (i % 64),
        false => bits[i / 64] &= !(1 << (i % 64)),
    }
}
