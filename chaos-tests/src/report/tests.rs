//! Tests for the report: a small synthetic run written into a scratch directory.

use std::fs;
use std::path::PathBuf;

use super::{write, Report};
use crate::check::Verdict;
use crate::history::{
    Call, EventType, FaultRecord, Item, ListRecord, Op, Ret, WatchKind, WatchRecord,
};

/// A scratch directory unique to this process and test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("chaos-report-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn op(id: u64, call: Call, ret: Ret, invoke_ms: u64, latency_ms: u64) -> Op {
    let invoke = invoke_ms * 1000;
    Op {
        id,
        client: id as u32 % 2,
        target: "lb".into(),
        call,
        ret,
        invoke,
        complete: invoke + latency_ms * 1000,
        rv: None,
    }
}

fn key() -> String {
    "k1".into()
}

fn ops() -> Vec<Op> {
    let unknown = || Ret::Unknown {
        error: "timeout".into(),
    };
    vec![
        op(
            0,
            Call::Create {
                key: key(),
                value: "a".into(),
            },
            Ret::Done,
            100,
            3,
        ),
        op(
            1,
            Call::Read { key: key() },
            Ret::Read {
                value: Some("a".into()),
            },
            1_200,
            1,
        ),
        op(
            2,
            Call::Cas {
                key: key(),
                expect: "a".into(),
                value: "b".into(),
            },
            Ret::Conflict,
            2_100,
            5,
        ),
        op(3, Call::Delete { key: key() }, unknown(), 2_500, 2_000),
        op(4, Call::Read { key: key() }, unknown(), 2_600, 900),
        op(
            5,
            Call::Cas {
                key: key(),
                expect: "a".into(),
                value: "c".into(),
            },
            Ret::Done,
            5_000,
            0,
        ),
    ]
}

fn faults() -> Vec<FaultRecord> {
    vec![
        FaultRecord {
            name: "kill-leader".into(),
            nodes: vec![0],
            start: 2_000_000,
            heal: 3_000_000,
            recovered: Some(3_250_000),
            restore: None,
        },
        FaultRecord {
            name: "pause".into(),
            nodes: vec![1],
            start: 4_000_000,
            heal: 4_500_000,
            recovered: None,
            restore: None,
        },
    ]
}

fn watches() -> Vec<WatchRecord> {
    let item = Item {
        key: key(),
        value: Some("a".into()),
        rv: 7,
    };
    vec![
        WatchRecord {
            watcher: "node-0".into(),
            at: 0,
            kind: WatchKind::Started { from: 0 },
        },
        WatchRecord {
            watcher: "node-0".into(),
            at: 150_000,
            kind: WatchKind::Event {
                event: EventType::Added,
                item: item.clone(),
            },
        },
        WatchRecord {
            watcher: "node-1".into(),
            at: 160_000,
            kind: WatchKind::Event {
                event: EventType::Added,
                item,
            },
        },
    ]
}

fn verdicts() -> Vec<Verdict> {
    let example: Vec<String> = (0..50).map(|i| format!("step {i}")).collect();
    vec![
        Verdict {
            checker: "linearizable",
            ok: true,
            checked: 6,
            counterexample: None,
        },
        Verdict {
            checker: "watch-order",
            ok: false,
            checked: 2,
            counterexample: Some(example.join("\n")),
        },
    ]
}

#[test]
fn writes_every_file_and_a_failing_summary() {
    let scratch = Scratch::new("failing");
    let (ops, finals, watches, faults, verdicts) =
        (ops(), ops()[1..2].to_vec(), watches(), faults(), verdicts());
    let lists = vec![ListRecord {
        target: "node-2".into(),
        at: 10,
        rv: 7,
        exact: true,
        pages: 1,
        items: vec![],
    }];
    let report = Report {
        title: "3 nodes, 6s, faults kill-leader,pause".into(),
        ops: &ops,
        finals: &finals,
        watches: &watches,
        lists: &lists,
        faults: &faults,
        verdicts: &verdicts,
        duration_us: 6_000_000,
    };
    let summary = write(&scratch.0, &report).unwrap();

    let read = |name: &str| fs::read_to_string(scratch.0.join(name)).unwrap();
    assert_eq!(read("history.jsonl").lines().count(), ops.len());
    assert_eq!(read("finals.jsonl").lines().count(), 1);
    assert_eq!(read("watch.jsonl").lines().count(), 3);
    assert_eq!(read("lists.jsonl").lines().count(), 1);
    assert_eq!(read("faults.jsonl").lines().count(), 2);
    let back: Vec<Op> = read("history.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(back, ops);
    let parsed: serde_json::Value = serde_json::from_str(&read("verdicts.json")).unwrap();
    assert_eq!(parsed.as_array().map(Vec::len), Some(2));
    for name in ["latency.svg", "throughput.svg", "availability.svg"] {
        let svg = read(name);
        assert!(
            svg.starts_with("<svg") || svg.starts_with("<?xml"),
            "{name}: {}",
            &svg[..40]
        );
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        assert!(svg.contains("<rect"), "{name}");
        assert!(svg.contains("#1 pause"), "{name}");
    }
    assert!(read("latency.svg").contains("<circle"));
    assert!(read("throughput.svg").contains("<polyline"));

    assert_eq!(read("summary.txt"), summary);
    for line in [
        "3 nodes, 6s, faults kill-leader,pause",
        "operations: 6 (ok 3, failed 2, unknown 1)",
        "  read    ok       1  failed       1  unknown       0",
        "  cas     ok       1  failed       1  unknown       0",
        "  delete  ok       0  failed       0  unknown       1",
        "node-0         1 events",
        "lists checked: 1",
        "faults: 2 injected",
        "  kill-leader        x1   recovery 250-250 ms  availability 0-0% ok",
        "  pause              x1   recovery none (1 never)  no ops",
        "PASS linearizable (checked 6)",
        "FAIL watch-order (checked 2)",
        "    step 39\n    ... 10 more lines, see verdicts.json",
    ] {
        assert!(summary.contains(line), "missing {line:?} in\n{summary}");
    }
    assert!(!summary.contains("step 40"));
    assert_eq!(summary.lines().last(), Some("VERDICT: FAIL (1 violation)"));
}

#[test]
fn an_empty_passing_run_still_reports() {
    let scratch = Scratch::new("empty");
    let verdicts = vec![Verdict {
        checker: "linearizable",
        ok: true,
        checked: 0,
        counterexample: None,
    }];
    let report = Report {
        title: "empty".into(),
        ops: &[],
        finals: &[],
        watches: &[],
        lists: &[],
        faults: &[],
        verdicts: &verdicts,
        duration_us: 0,
    };
    let summary = write(&scratch.0, &report).unwrap();
    assert!(scratch.0.join("availability.svg").exists());
    assert_eq!(summary.lines().last(), Some("VERDICT: PASS"));
}
