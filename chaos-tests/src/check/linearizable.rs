//! Linearizability of the client operations, key by key, against a register; and durability:
//! whether the final reads still agree with every acknowledged write.
//!
//! A cluster destroyed and restored from a backup ([`Restore`]) cuts each key's history in two
//! lives. The backup is a consistent read of every key at one instant of its save: the key's value
//! in it (read from the restored cluster at its first revision) must be linearizable with the
//! operations before, so nothing acknowledged before the save was lost and nothing was made up;
//! and the operations from the destruction on are checked from exactly that value. Writes
//! acknowledged after the backup's revision are the loss a restore means, and nothing else.

use std::collections::BTreeMap;

use super::register::{self, Start};
use super::{describe_op, shrink, Verdict};
use crate::history::{Call, Op, Restore, Ret};

/// The client of the backups' reads, in counter-examples.
const BACKUP_CLIENT: u32 = u32::MAX - 1;

/// Acknowledged writes shown when a final read contradicts them.
const LAST_WRITES: usize = 3;

/// "linearizable": every key's history can be linearized, in each life of the cluster.
/// `checked` counts operations.
pub fn check(ops: &[Op], restores: &[Restore]) -> Verdict {
    let reads = backup_reads(ops, restores);
    let all: Vec<&Op> = ops.iter().chain(&reads).collect();
    let mut failures: Vec<(usize, String)> = by_key(&all)
        .iter()
        .flat_map(|(key, history)| lives(key, history, restores).into_iter().filter_map(|life| explain(key, &life)))
        .collect();
    failures.sort_by_key(|(size, _)| *size);
    Verdict::from_problems("linearizable", ops.len(), failures.into_iter().map(|(_, text)| text).collect())
}

/// "no-lost-writes": for every key whose history is linearizable, it still is with the key's
/// final read (made after every fault healed and every other operation completed) at the end.
/// `checked` counts final reads that answered.
pub fn durability(ops: &[Op], finals: &[Op], restores: &[Restore]) -> Verdict {
    let all: Vec<&Op> = ops.iter().collect();
    let keys = by_key(&all);
    let mut checked = 0;
    let mut problems = Vec::new();
    for last in finals.iter().filter(|op| matches!((&op.call, &op.ret), (Call::Read { .. }, Ret::Read { .. }))) {
        checked += 1;
        let key = last.call.key();
        let history = keys.get(key).cloned().unwrap_or_default();
        let Some(mut life) = lives(key, &history, restores).pop() else { continue };
        if !linearizable(&life) {
            continue;
        }
        life.ops.push(last);
        if !linearizable(&life) {
            problems.push(lost(key, &life.ops[..life.ops.len() - 1], last));
        }
    }
    Verdict::from_problems("no-lost-writes", checked, problems)
}

/// Each key's operations, by invoke time.
fn by_key<'a>(ops: &[&'a Op]) -> BTreeMap<&'a str, Vec<&'a Op>> {
    let mut keys: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in ops {
        keys.entry(op.call.key()).or_default().push(*op);
    }
    for history in keys.values_mut() {
        history.sort_by_key(|op| (op.invoke, op.id));
    }
    keys
}

/// A key's operations in one life of the cluster, and what the key may have held when it began.
struct Life<'a> {
    ops: Vec<&'a Op>,
    starts: Vec<Start<'a>>,
}

/// Each backup as reads: for every key a client touched or the backup holds, a read that ran
/// while the save did and saw what the restored cluster held.
fn backup_reads(ops: &[Op], restores: &[Restore]) -> Vec<Op> {
    let mut reads = Vec::new();
    for restore in restores {
        let mut keys: Vec<&str> = ops.iter().map(|op| op.call.key()).chain(restore.held.keys().map(String::as_str)).collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            reads.push(Op {
                id: u64::MAX - reads.len() as u64,
                client: BACKUP_CLIENT,
                target: format!("backup at rv {}", restore.revision),
                call: Call::Read { key: key.to_string() },
                ret: Ret::Read { value: restore.held.get(key).cloned() },
                invoke: restore.save_started,
                complete: restore.saved,
                rv: None,
            });
        }
    }
    reads
}

/// A key's history (by invoke time) cut at each restore: an operation invoked before the
/// cluster was destroyed belongs to the life before, and each later life starts from what the
/// backup held.
fn lives<'a>(key: &str, history: &[&'a Op], restores: &'a [Restore]) -> Vec<Life<'a>> {
    let mut lives = Vec::new();
    let (mut rest, mut starts) = (history, vec![Start::Absent]);
    for restore in restores {
        let (before, after) = rest.split_at(rest.partition_point(|op| op.invoke < restore.destroyed));
        lives.push(Life { ops: before.to_vec(), starts });
        starts = vec![restore.held.get(key).map_or(Start::Absent, |v| Start::Value(v))];
        rest = after;
    }
    lives.push(Life { ops: rest.to_vec(), starts });
    lives
}

fn linearizable(life: &Life) -> bool {
    life.ops.iter().all(|op| register::possible(op)) && register::linearizable(&register::prefix(&life.ops, life.ops.len()), &life.starts)
}

/// Why a key's history in one life is not linearizable, with the number of operations shown;
/// `None` when it is.
fn explain(key: &str, life: &Life) -> Option<(usize, String)> {
    if let Some(op) = life.ops.iter().find(|op| !register::possible(op)) {
        return Some((1, format!("key {key}: an answer this call cannot give:\n  {}", describe_op(op))));
    }
    (!linearizable(life)).then(|| shrink::explain(key, &life.ops, &life.starts))
}

/// Why the final read `last` contradicts the key's (linearizable) history.
fn lost(key: &str, history: &[&Op], last: &Op) -> String {
    let mut text = format!("key {key}: the final read contradicts the acknowledged writes\n  final read: {}", describe_op(last));
    if let Ret::Read { value: Some(v) } = &last.ret {
        let writer = history.iter().find(|op| matches!(&op.call, Call::Create { value, .. } | Call::Cas { value, .. } if value == v));
        match writer {
            Some(op) => text.push_str(&format!("\n  its value was written by: {}", describe_op(op))),
            None => text.push_str("\n  no operation ever wrote its value"),
        }
    }
    let mut acked: Vec<&&Op> = history.iter().filter(|op| register::acknowledged(op)).collect();
    acked.sort_by_key(|op| op.complete);
    let shown = &acked[acked.len().saturating_sub(LAST_WRITES)..];
    if !shown.is_empty() {
        text.push_str("\n  the last acknowledged writes of the key:");
    }
    for op in shown {
        text.push_str(&format!("\n    {}", describe_op(op)));
    }
    text
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::time::{Duration, Instant};

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::check::testutil::*;

    fn failure(v: &Verdict) -> &str {
        assert!(!v.ok, "expected a failure: {v:?}");
        v.counterexample.as_deref().expect("a counter-example")
    }

    #[test]
    fn sequential_and_concurrent_histories_pass() {
        let ops = [
            op(1, create("k", "a"), Ret::Done, 0, 10),
            op(2, read("k"), got(Some("a")), 20, 30),
            op(3, cas("k", "a", "b"), Ret::Done, 40, 60),
            // Concurrent with the CAS: may see either value.
            op(4, read("k"), got(Some("a")), 45, 70),
            op(5, cas("k", "a", "c"), Ret::Conflict, 80, 90),
            op(6, create("k", "d"), Ret::Conflict, 95, 99),
            op(7, delete("k"), Ret::Done, 100, 110),
            op(8, delete("k"), Ret::NotFound, 120, 130),
            op(9, cas("k", "b", "e"), Ret::NotFound, 140, 150),
            op(10, read("k"), got(None), 160, 170),
            op(11, read("other"), got(None), 0, 5),
        ];
        let v = check(&ops, &[]);
        assert!(v.ok, "{v:?}");
        assert_eq!(v.checked, ops.len());
    }

    #[test]
    fn a_stale_read_fails_and_names_its_key_only() {
        let ops = [
            op(1, create("k", "a"), Ret::Done, 0, 10),
            op(2, create("j", "x"), Ret::Done, 0, 10),
            op(3, cas("k", "a", "b"), Ret::Done, 20, 30),
            op(4, read("j"), got(Some("x")), 35, 45),
            op(5, read("k"), got(Some("a")), 40, 50),
        ];
        let v = check(&ops, &[]);
        let text = failure(&v);
        assert!(text.starts_with("key k: the first 3 operations (by invoke time) cannot be linearized; from invoke time 20 on"), "{text}");
        assert!(text.contains("\n  #3 ") && text.contains("\n  #5 ") && !text.contains("#1 ") && !text.contains("key j"), "{text}");
        assert_eq!(v.checked, 5);
    }

    #[test]
    fn an_impossible_answer_fails_by_itself() {
        let ops = [op(1, create("k", "a"), Ret::NotFound, 0, 10)];
        assert!(failure(&check(&ops, &[])).contains("an answer this call cannot give"));
        let ops = [op(1, create("k", "a"), Ret::Conflict, 0, 10)];
        assert!(failure(&check(&ops, &[])).contains("#1 "));
    }

    #[test]
    fn unknown_writes_may_take_effect_late_or_never() {
        let ops = [
            op(1, create("k", "a"), Ret::Done, 0, 10),
            op(2, cas("k", "a", "b"), unknown(), 20, 30),
            op(3, read("k"), got(Some("a")), 40, 50),
            op(4, read("k"), unknown(), 45, 55),
            op(5, read("k"), got(Some("b")), 60, 70),
            op(6, delete("k"), unknown(), 80, 90),
            op(7, create("k", "c"), unknown(), 81, 91),
            op(8, read("k"), got(Some("b")), 100, 110),
        ];
        assert!(check(&ops, &[]).ok);
    }

    #[test]
    fn a_lost_update_fails_even_with_unknowns_around() {
        let ops = [
            op(1, create("k", "a"), Ret::Done, 0, 10),
            op(2, delete("k"), unknown(), 15, 16),
            op(3, cas("k", "a", "b"), Ret::Done, 20, 30),
            op(4, cas("k", "a", "c"), Ret::Done, 40, 50),
            op(5, create("k", "d"), unknown(), 55, 56),
        ];
        let text = failure(&check(&ops, &[])).to_string();
        assert!(text.contains("#3 ") && text.contains("#4 ") && text.contains("optional"), "{text}");
    }

    /// A client's next operation: its call, invoke, complete, and when it takes effect.
    fn next_op(rng: &mut StdRng, after: u64, last_seen: &Option<String>) -> (Call, u64, u64, u64) {
        let value = format!("v{}", rng.random_range(0..u64::MAX));
        let call = match (rng.random_range(0..10), last_seen) {
            (0..4, _) => read("k"),
            (4..7, Some(expect)) => cas("k", expect, &value),
            (7, _) => delete("k"),
            _ => create("k", &value),
        };
        let invoke = after + rng.random_range(1..50);
        let effect = invoke + rng.random_range(0..200);
        (call, invoke, effect + rng.random_range(0..200), effect)
    }

    /// A history of atomic register operations, each taking effect at a random instant inside
    /// its window; some writes end unknown and half of those take no effect.
    fn random_history(seed: u64, clients: usize, len: usize) -> Vec<Op> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut state: Option<String> = None;
        let mut last_seen: Vec<Option<String>> = vec![None; clients];
        let mut next: Vec<(Call, u64, u64, u64)> = (0..clients).map(|_| next_op(&mut rng, 0, &None)).collect();
        let mut queue: BinaryHeap<Reverse<(u64, usize)>> = next.iter().enumerate().map(|(c, n)| Reverse((n.3, c))).collect();
        let mut ops = Vec::new();
        while ops.len() < len {
            let Reverse((_, c)) = queue.pop().expect("every client has a next operation");
            let (call, invoke, complete, _) = next[c].clone();
            let before = state.clone();
            let ret = match &call {
                Call::Read { .. } => got(state.as_deref()),
                Call::Create { value, .. } if state.is_none() => {
                    state = Some(value.clone());
                    Ret::Done
                }
                Call::Cas { expect, value, .. } if state.as_ref() == Some(expect) => {
                    state = Some(value.clone());
                    Ret::Done
                }
                Call::Create { .. } | Call::Cas { .. } if state.is_some() => Ret::Conflict,
                Call::Delete { .. } if state.take().is_some() => Ret::Done,
                _ => Ret::NotFound,
            };
            let ret = match call.is_write() && rng.random_bool(0.05) {
                true if rng.random_bool(0.5) => {
                    state = before;
                    unknown()
                }
                true => unknown(),
                false => ret,
            };
            match (&call, &ret) {
                (_, Ret::Read { value }) => last_seen[c] = value.clone(),
                (Call::Create { value, .. } | Call::Cas { value, .. }, Ret::Done) => last_seen[c] = Some(value.clone()),
                _ => {}
            }
            ops.push(Op { client: c as u32, ..op(ops.len() as u64, call, ret, invoke, complete) });
            next[c] = next_op(&mut rng, complete, &last_seen[c]);
            queue.push(Reverse((next[c].3, c)));
        }
        ops
    }

    #[test]
    fn a_long_random_correct_history_is_linearizable_quickly() {
        let ops = random_history(7, 10, 2000);
        assert!(ops.iter().any(|op| matches!(op.ret, Ret::Unknown { .. }) && op.call.is_write()));
        assert!(ops.iter().any(|op| op.ret == Ret::Conflict) && ops.iter().any(|op| op.ret == Ret::NotFound));
        let start = Instant::now();
        let v = check(&ops, &[]);
        assert!(v.ok, "{v:?}");
        assert!(start.elapsed() < Duration::from_secs(3), "took {:?}", start.elapsed());
        for seed in 0..20 {
            assert!(check(&random_history(seed, 4, 200), &[]).ok, "seed {seed}");
        }
    }

    #[test]
    fn a_long_history_with_one_bad_read_fails_with_a_short_counterexample() {
        let mut ops = random_history(11, 10, 2000);
        let bad = ops.iter().position(|op| op.id > 1500 && matches!(op.call, Call::Read { .. })).expect("a read");
        ops[bad].ret = got(Some("never-written"));
        let text = failure(&check(&ops, &[])).to_string();
        assert!(text.lines().count() < 12 && text.contains(&format!("\n  #{} ", ops[bad].id)), "{text}");
    }

    #[test]
    fn final_reads_find_lost_writes() {
        let ops = [
            op(1, create("k", "a"), Ret::Done, 0, 10),
            op(2, cas("k", "a", "b"), Ret::Done, 20, 30),
            op(3, cas("k", "b", "c"), unknown(), 40, 50),
            op(4, create("j", "x"), Ret::Done, 0, 10),
        ];
        let final_read = |id, key, value| op(id, read(key), got(value), 1000, 1010);
        let v = durability(&ops, &[final_read(10, "k", Some("c")), final_read(11, "j", Some("x"))], &[]);
        assert!(v.ok && v.checked == 2, "{v:?}");
        assert!(durability(&ops, &[final_read(10, "k", Some("b"))], &[]).ok);
        let text = failure(&durability(&ops, &[final_read(10, "k", Some("a"))], &[])).to_string();
        assert!(text.contains("written by: #1 ") && text.contains("last acknowledged writes") && text.contains("#2 "), "{text}");
        let text = failure(&durability(&ops, &[final_read(10, "j", None)], &[])).to_string();
        assert!(text.contains("key j") && text.contains("#4 "), "{text}");
        let text = failure(&durability(&ops, &[final_read(10, "new", Some("z"))], &[])).to_string();
        assert!(text.contains("no operation ever wrote its value"), "{text}");
    }

    #[test]
    fn final_reads_skip_keys_that_already_fail() {
        let ops = [op(1, create("k", "a"), Ret::Done, 0, 10), op(2, read("k"), got(None), 20, 30)];
        let v = durability(&ops, &[op(10, read("k"), got(None), 100, 110), op(11, read("k"), unknown(), 100, 110)], &[]);
        assert!(v.ok && v.checked == 1, "{v:?}");
    }

    /// A backup saved between 100 and 120 at revision 5, the cluster destroyed at 200, the
    /// restored one holding `held`.
    fn restore(held: &[(&str, &str)]) -> Restore {
        Restore { revision: 5, save_started: 100, saved: 120, destroyed: 200, held: held.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
    }

    #[test]
    fn writes_acknowledged_after_the_backup_may_be_lost_and_nothing_else() {
        let ops = [
            op(1, create("k", "a"), Ret::Done, 0, 10),
            op(2, create("j", "x"), Ret::Done, 0, 10),
            // After the save: lost with the restore.
            op(3, cas("k", "a", "b"), Ret::Done, 150, 160),
            op(4, read("k"), got(Some("b")), 170, 180),
            op(5, delete("j"), Ret::Done, 150, 160),
            // The restored cluster: back at "a", "x" there again.
            op(6, read("k"), got(Some("a")), 300, 310),
            op(7, cas("k", "a", "c"), Ret::Done, 320, 330),
            op(8, read("j"), got(Some("x")), 300, 310),
        ];
        let restores = [restore(&[("k", "a"), ("j", "x")])];
        let v = check(&ops, &restores);
        assert!(v.ok, "{v:?}");
        let finals = [op(10, read("k"), got(Some("c")), 1000, 1010), op(11, read("j"), got(Some("x")), 1000, 1010)];
        assert!(durability(&ops, &finals, &restores).ok);
        // Without the restore, the same history lost writes.
        assert!(!check(&ops, &[]).ok);

        // A backup without a write acknowledged before its save began.
        let text = failure(&check(&ops, &[restore(&[("k", "a")])])).to_string();
        assert!(text.contains("key j") && text.contains("backup at rv 5"), "{text}");
        // A backup holding a value written only after its save.
        assert!(failure(&check(&ops, &[restore(&[("k", "b"), ("j", "x")])])).contains("key k"));
        // The restored cluster not holding what its backup did.
        let stale = [op(1, create("k", "a"), Ret::Done, 0, 10), op(6, read("k"), got(None), 300, 310)];
        assert!(failure(&check(&stale, &[restore(&[("k", "a")])])).contains("key k"));
        // A final read that lost a write of the restored cluster.
        let finals = [op(10, read("k"), got(Some("a")), 1000, 1010)];
        assert!(failure(&durability(&ops, &finals, &restores)).contains("key k"));
    }

    #[test]
    fn a_write_running_during_the_save_may_or_may_not_be_in_the_backup() {
        let ops = [op(1, create("k", "a"), Ret::Done, 0, 10), op(2, cas("k", "a", "b"), Ret::Done, 105, 115), op(3, read("k"), got(Some("b")), 300, 310)];
        assert!(check(&ops, &[restore(&[("k", "b")])]).ok);
        let ops = [op(1, create("k", "a"), Ret::Done, 0, 10), op(2, cas("k", "a", "b"), Ret::Done, 105, 115), op(3, read("k"), got(Some("a")), 300, 310)];
        assert!(check(&ops, &[restore(&[("k", "a")])]).ok);
    }
}
