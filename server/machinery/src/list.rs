//! A list as storage answers it: the items as stored bytes, with the collection's metadata,
//! before it is encoded in the form a client asked for.

use bytes::Bytes;

/// A list response: items as stored bytes plus the collection metadata.
#[derive(Debug, Clone)]
pub struct ListReply {
    pub rev: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<u64>,
    pub items: Vec<Bytes>,
}
