//! The checkers: each reads the recorded history and gives a verdict, with the smallest
//! counter-example it found when the history breaks its guarantee.

pub mod linearizable;
pub mod lists;
mod register;
mod shrink;
#[cfg(test)]
mod testutil;
mod truth;
pub mod watch;

use serde::Serialize;

use crate::history::{Call, Op, Ret};

/// Problems listed in a counter-example; the count of the rest follows them.
const MAX_PROBLEMS: usize = 10;

/// One checker's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub checker: &'static str,
    pub ok: bool,
    /// How many things it checked (operations, events, lists).
    pub checked: usize,
    /// When `ok` is false: the smallest history that shows the violation, as text.
    pub counterexample: Option<String>,
}

impl Verdict {
    /// Passes when `problems` is empty; otherwise shows the first few, each a block of lines.
    fn from_problems(checker: &'static str, checked: usize, problems: Vec<String>) -> Verdict {
        if problems.is_empty() {
            return Verdict { checker, ok: true, checked, counterexample: None };
        }
        let mut text = problems.iter().take(MAX_PROBLEMS).cloned().collect::<Vec<_>>().join("\n");
        if problems.len() > MAX_PROBLEMS {
            text.push_str(&format!("\n... and {} more", problems.len() - MAX_PROBLEMS));
        }
        Verdict { checker, ok: false, checked, counterexample: Some(text) }
    }
}

/// One operation on one line: id, client, target, call, answer, invoke and complete times.
fn describe_op(op: &Op) -> String {
    let call = match &op.call {
        Call::Read { key } => format!("read {key}"),
        Call::Create { key, value } => format!("create {key} = {value}"),
        Call::Cas { key, expect, value } => format!("cas {key} {expect} -> {value}"),
        Call::Delete { key } => format!("delete {key}"),
    };
    let ret = match &op.ret {
        Ret::Read { value: Some(v) } => format!("read {v}"),
        Ret::Read { value: None } => "read nothing".to_string(),
        Ret::Done => "done".to_string(),
        Ret::Conflict => "conflict".to_string(),
        Ret::NotFound => "not found".to_string(),
        Ret::Unknown { error } => format!("unknown ({error})"),
    };
    let rv = op.rv.map(|rv| format!(" rv {rv}")).unwrap_or_default();
    format!("#{} client {} via {}: {call} => {ret}{rv} [invoke {}, complete {}]", op.id, op.client, op.target, op.invoke, op.complete)
}
