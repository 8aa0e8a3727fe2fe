//! The compare-and-set register clients: each loops over random operations on a few hot keys
//! against its target, recording invoke and complete times and the outcome. A write that times
//! out or fails without a definite answer is recorded as unknown (it may have happened).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kube::api::{DeleteParams, ListParams, PostParams};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{configmap, rv_of, Target};
use crate::history::{Call, Op, Ret};
use crate::record::Recorder;

/// How long a client waits for any answer before recording the operation as unknown.
pub const OP_TIMEOUT: Duration = Duration::from_secs(5);

fn failed(e: kube::Error) -> Ret {
    match &e {
        kube::Error::Api(s) if s.code == 409 => Ret::Conflict,
        kube::Error::Api(s) if s.code == 404 => Ret::NotFound,
        kube::Error::Api(s) => Ret::Unknown { error: format!("{} {}", s.code, s.message) },
        other => Ret::Unknown { error: other.to_string() },
    }
}

/// Runs one operation and records it; returns the answer and the resourceVersion it carried.
/// A CAS sends `cas_rv`, the resourceVersion its expected value was read at.
async fn perform(rec: &Recorder, client: u32, target: &Target, call: Call, cas_rv: Option<String>) -> (Ret, Option<String>) {
    let invoke = rec.now();
    let api = &target.api;
    let work = async {
        match &call {
            Call::Read { key } => match api.get_opt(key).await {
                Ok(Some(cm)) => {
                    let rv = cm.metadata.resource_version.clone();
                    let value = cm.data.and_then(|mut d| d.remove("v"));
                    (Ret::Read { value }, rv)
                }
                Ok(None) => (Ret::Read { value: None }, None),
                Err(e) => (failed(e), None),
            },
            Call::Create { key, value } => match api.create(&PostParams::default(), &configmap(key, value, None)).await {
                Ok(cm) => (Ret::Done, cm.metadata.resource_version),
                Err(e) => (failed(e), None),
            },
            Call::Cas { key, value, .. } => match api.replace(key, &PostParams::default(), &configmap(key, value, cas_rv)).await {
                Ok(cm) => (Ret::Done, cm.metadata.resource_version),
                Err(e) => (failed(e), None),
            },
            Call::Delete { key } => match api.delete(key, &DeleteParams::default()).await {
                Ok(either) => (Ret::Done, either.left().and_then(|cm| cm.metadata.resource_version)),
                Err(e) => (failed(e), None),
            },
        }
    };
    let (ret, rv) = tokio::time::timeout(OP_TIMEOUT, work).await.unwrap_or_else(|_| (Ret::Unknown { error: "timeout".into() }, None));
    let complete = rec.now();
    rec.op(Op { id: rec.next_id(), client, target: target.name.clone(), call, ret: ret.clone(), invoke, complete, rv: rv.as_deref().and_then(|v| v.parse().ok()) });
    (ret, rv)
}

/// Lists the namespace (one consistent read of every key, recorded as a read per key with the
/// list's times), then updates `key` with the resourceVersion the list showed, as a controller
/// fed by a list does.
async fn list_then_update(rec: &Recorder, client: u32, target: &Target, keys: &[String], key: String, value: String) -> Ret {
    let invoke = rec.now();
    let listed = tokio::time::timeout(OP_TIMEOUT, target.api.list(&ListParams::default())).await;
    let complete = rec.now();
    let list = match listed {
        Ok(Ok(list)) => list,
        failure => {
            let error = match failure {
                Ok(Err(e)) => e.to_string(),
                _ => "timeout".to_string(),
            };
            let ret = Ret::Unknown { error };
            rec.op(Op { id: rec.next_id(), client, target: target.name.clone(), call: Call::Read { key }, ret: ret.clone(), invoke, complete, rv: None });
            return ret;
        }
    };
    let mut chosen = None;
    for k in keys {
        let cm = list.items.iter().find(|c| c.metadata.name.as_deref() == Some(k.as_str()));
        let seen = cm.and_then(|c| c.data.as_ref()).and_then(|d| d.get("v").cloned());
        if *k == key {
            chosen = cm.map(|c| (seen.clone(), c.metadata.resource_version.clone()));
        }
        let rv = cm.and_then(|c| rv_of(&c.metadata));
        rec.op(Op { id: rec.next_id(), client, target: target.name.clone(), call: Call::Read { key: k.clone() }, ret: Ret::Read { value: seen }, invoke, complete, rv });
    }
    match chosen {
        Some((Some(expect), rv)) => perform(rec, client, target, Call::Cas { key, expect, value }, rv).await.0,
        _ => Ret::Read { value: None },
    }
}

/// One register client: until `stop`, a random mix of read-then-CAS (30%), list-then-CAS (15%),
/// plain reads (25%), creates (15%) and deletes (15%) on `keys`. Every value written is unique
/// (`c<client>-<n>`).
pub async fn run(rec: Arc<Recorder>, client: u32, target: Target, keys: Arc<Vec<String>>, seed: u64, stop: Arc<AtomicBool>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let key = keys[rng.random_range(0..keys.len())].clone();
        let dice: f64 = rng.random();
        n += 1;
        let value = format!("c{client}-{n}");
        let ret = if dice < 0.15 {
            list_then_update(&rec, client, &target, &keys, key, value).await
        } else if dice < 0.7 {
            let (ret, rv) = perform(&rec, client, &target, Call::Read { key: key.clone() }, None).await;
            match (&ret, dice < 0.45) {
                (Ret::Read { value: Some(expect) }, true) => {
                    let call = Call::Cas { key, expect: expect.clone(), value };
                    perform(&rec, client, &target, call, rv).await.0
                }
                _ => ret,
            }
        } else if dice < 0.85 {
            perform(&rec, client, &target, Call::Create { key, value }, None).await.0
        } else {
            perform(&rec, client, &target, Call::Delete { key }, None).await.0
        };
        // A client whose node is down does not spin.
        if matches!(ret, Ret::Unknown { .. }) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
