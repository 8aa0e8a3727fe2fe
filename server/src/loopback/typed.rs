//! The loopback client for one kind, typed by k8s-openapi as kube-rs's `Api<K>` is: objects go
//! out and come back as the kind's own struct, and the resource is found from the type (its
//! group, version and plural), so a caller names neither URLs nor strings. It holds the verbs
//! its callers use; the untyped [`Client`] has them all.

use std::marker::PhantomData;

use futures::Stream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::WatchEvent;
use k8s_openapi::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use access::request::{ResourceRequest, Verb};
use machinery::error::{ApiError, ApiResult};
use machinery::patch::PatchKind;
use machinery::registry::{self, ResourceInfo};

use super::{request, Client};

/// Kind `K` in one namespace (or cluster-wide), through a [`Client`].
pub struct Api<K> {
    client: Client,
    info: &'static ResourceInfo,
    namespace: Option<String>,
    kind: PhantomData<fn() -> K>,
}

impl Client {
    /// Kind `K` in `namespace` (`None` for a cluster-scoped kind), as this client's identity.
    pub fn api<K: Resource>(&self, namespace: Option<&str>) -> ApiResult<Api<K>> {
        let info = registry::lookup(K::GROUP, K::VERSION, K::URL_PATH_SEGMENT)
            .ok_or_else(|| ApiError::internal(format!("{} {} is not served", K::API_VERSION, K::URL_PATH_SEGMENT)))?;
        Ok(Api { client: self.clone(), info, namespace: namespace.map(str::to_string), kind: PhantomData })
    }
}

impl<K: Resource + Serialize + DeserializeOwned + Send + 'static> Api<K> {
    /// Creates `obj` (unknown fields refused) unless an object of its name exists (what
    /// post-start hooks do with the objects every cluster has).
    pub async fn ensure(&self, obj: &K) -> ApiResult<()> {
        match self.client.create(&self.request("", Verb::Create), encode(obj)?).await {
            Err(ApiError::AlreadyExists { .. }) => Ok(()),
            other => other,
        }
    }

    /// Patches the object named `name` (a JSON, merge or strategic merge patch); returns it as
    /// stored.
    pub async fn patch(&self, name: &str, kind: PatchKind, patch: Value) -> ApiResult<K> {
        decode(self.client.patch(&self.request(name, Verb::Patch), kind, patch).await?)
    }

    /// Server-side apply of `obj`'s status as field manager `manager`, taking over fields other
    /// managers hold.
    pub async fn apply_status(&self, name: &str, manager: &str, obj: &K) -> ApiResult<K> {
        let req = ResourceRequest { subresource: Some("status".into()), ..self.request(name, Verb::Patch) };
        decode(self.client.apply(&req, manager, true, encode(obj)?).await?)
    }

    /// The kind's objects (in the namespace, or in all) as ADDED events, then every change to
    /// them: [`Client::watch`], typed.
    pub async fn watch(&self) -> ApiResult<impl Stream<Item = ApiResult<WatchEvent<K>>> + Send + use<K>> {
        self.client.watch(&self.request("", Verb::Watch)).await
    }

    /// The resource `K` is served as.
    pub fn info(&self) -> &'static ResourceInfo {
        self.info
    }

    fn request(&self, name: &str, verb: Verb) -> ResourceRequest {
        request(self.info, self.namespace.as_deref(), name, verb)
    }
}

/// `obj` as JSON (k8s-openapi's serializer writes its `apiVersion` and `kind`).
fn encode<K: Resource + Serialize>(obj: &K) -> ApiResult<Value> {
    serde_json::to_value(obj).map_err(ApiError::internal)
}

fn decode<K: DeserializeOwned>(value: Value) -> ApiResult<K> {
    serde_json::from_value(value).map_err(ApiError::internal)
}
