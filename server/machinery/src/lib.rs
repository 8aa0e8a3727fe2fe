//! `machinery`: the object model of the API server, with no knowledge of incoming requests,
//! users or writes to storage. What a stored object is and how it may change: metadata and names
//! ([`meta`]), the registry of kinds and their strategies ([`registry`]), custom resource
//! definitions and their schemas ([`crd`]), selectors, patches and managed fields, the encodings
//! (JSON, YAML, Protobuf, CBOR, Table, metadata-only), OpenAPI, CEL ([`expr`]), and the error
//! every layer above answers with ([`error`]), which becomes a `metav1.Status`.
//!
//! The layers above it: `access` (who a request is and what it may do), `admission`, the API
//! server itself, and the controllers that run inside it.

pub mod cbor;
pub mod crd;
pub mod delete_options;
pub mod error;
pub mod expr;
pub mod features;
pub mod fieldmanager;
pub mod go_duration;
pub mod grace;
pub mod list;
pub mod meta;
pub mod metadata_form;
pub mod negotiate;
pub mod openapi;
pub mod patch;
pub mod prepare;
pub mod protobuf;
pub mod query;
pub mod registry;
pub mod selector;
pub mod stored;
pub mod table_form;
#[cfg(test)]
mod test_values;
pub mod webhook;
pub mod yaml;
