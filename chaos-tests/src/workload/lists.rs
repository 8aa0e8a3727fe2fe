//! The lister: every quarter second, a paged list (two items a page) of the workload namespace
//! on a random target, and an Exact list at the revision of the list before it, both recorded
//! whole for the list-consistency checker.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kube::api::{ListParams, VersionMatch};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{item, Target};
use crate::history::{Item, ListRecord};
use crate::record::Recorder;

/// All pages of one list; `at` asks for that exact revision.
async fn list(target: &Target, at: Option<u64>) -> Result<(u64, u32, Vec<Item>), kube::Error> {
    let mut items = Vec::new();
    let mut params = ListParams::default().limit(2);
    if let Some(rv) = at {
        params = params.at(&rv.to_string()).matching(VersionMatch::Exact);
    }
    let mut pages = 0;
    let mut rv = None;
    loop {
        let page = target.api.list(&params).await?;
        pages += 1;
        rv = rv.or_else(|| page.metadata.resource_version.as_deref().and_then(|v| v.parse().ok()));
        items.extend(page.items.iter().map(item));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = ListParams::default().limit(2).continue_token(&token),
            None => return Ok((rv.unwrap_or(0), pages, items)),
        }
    }
}

pub async fn run(rec: Arc<Recorder>, targets: Vec<Target>, seed: u64, stop: Arc<AtomicBool>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut previous: Option<u64> = None;
    while !stop.load(Ordering::Relaxed) {
        let target = &targets[rng.random_range(0..targets.len())];
        let at = rec.now();
        let latest = tokio::time::timeout(Duration::from_secs(5), list(target, None)).await;
        if let Ok(Ok((rv, pages, items))) = latest {
            rec.list(ListRecord { target: target.name.clone(), at, rv, exact: false, pages, items });
            if let Some(past) = previous.replace(rv) {
                let at = rec.now();
                if let Ok(Ok((rv, pages, items))) = tokio::time::timeout(Duration::from_secs(5), list(target, Some(past))).await {
                    rec.list(ListRecord { target: target.name.clone(), at, rv, exact: true, pages, items });
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
